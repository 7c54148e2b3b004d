"""The panel's first words (hardware/splash.py): drawn by the box's own code,
shipped as the controller's bytes, sent with the standard library alone."""

import errno
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from hardware import splash
from hardware.i2c_panel import CMD, EmulatedPanel
from hardware.layout import problems

CASES = [(m, lang) for m in splash.MESSAGES for lang in splash.LANGUAGES]


@pytest.mark.parametrize("message,lang", CASES)
def test_the_shipped_frames_are_what_the_box_draws(message, lang):
    # `python -m hardware.splash --render` makes them; a changed font, text or
    # translation without it fails here.
    assert splash.frame_path(message, lang).read_bytes() == splash.render(message, lang)


@pytest.mark.parametrize("message,lang", CASES)
def test_each_frame_passes_the_layout_check(message, lang):
    canvas = splash.draw(message, lang)
    assert problems(canvas) == []
    assert any(item.get("text") for item in canvas.items)


def test_the_starting_frame_is_the_box_s_own(session):
    """The box's first frame ("Starting…", before its pins) and the splash's
    are the same picture: no jump when the companion takes the panel over."""
    import hardware

    box = hardware.Box(session, {}, mock=True, pins_later=True)
    box.start()
    try:
        assert box.frame.image.tobytes() == splash.draw("starting", "en").image.tobytes()
    finally:
        box.close()


@pytest.mark.parametrize("controller", ["ssd1306", "sh1106"])
@pytest.mark.parametrize("rotate", [0, 2])
def test_the_glass_shows_the_frame(tmp_path, controller, rotate):
    (tmp_path / "companion.toml").write_text(
        f'language = "fr"\n[display]\ndriver = "{controller}"\naddress = "0x3D"\nrotate = {rotate}\n')
    panel = EmulatedPanel(controller, address=0x3D)
    assert splash.show("growing", tmp_path, bus=panel)
    want = splash.draw("growing", "fr").image.convert("1")
    if rotate == 2:
        want = want.rotate(180)
    assert panel.on
    assert ImageChops.difference(panel.image().convert("1"), want).getbbox() is None


@pytest.mark.parametrize("controller", ["ssd1306", "sh1106"])
def test_its_set_up_is_luma_s(controller):
    """The controller is set up as luma.oled's driver sets it up a moment
    later (the same commands, the display switched on after the frame)."""
    from luma.core.interface.serial import i2c
    from luma.oled import device

    class Recorder:
        def __init__(self):
            self.commands = []
            self.data = False

        def write_i2c_block_data(self, address, control, data):
            if control == splash.DATA:
                self.data = True
            elif not self.data:
                self.commands += list(data)

    recorder = Recorder()
    getattr(device, controller)(i2c(bus=recorder, address=0x3C))
    # luma addresses the whole frame (its clear) right after its set-up
    setup = recorder.commands[:len(splash.INIT[controller])]
    assert setup == splash.INIT[controller]


def test_no_panel_is_no_error(tmp_path):
    (tmp_path / "companion.toml").write_text('[display]\nport = 97\n')
    assert splash.show("starting", tmp_path) is False


def test_the_command_needs_only_the_standard_library(tmp_path):
    """Run as a file by the system's python3 early in the boot: it may load
    nothing from the companion's environment (no Pillow, no luma, no core)."""
    (tmp_path / "companion.toml").write_text('[display]\nport = 97\n')
    script = (
        "import runpy, sys\n"
        f"sys.argv = ['splash.py', 'starting', '--data', {str(tmp_path)!r}, '--wait', '0']\n"
        "try:\n"
        f"    runpy.run_path({str(splash.__file__)!r}, run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PIL', 'luma', 'companion', 'hardware', 'gpiozero'))\n"
        "print(' '.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []


def test_it_never_draws_over_a_running_companion(tmp_path, monkeypatch):
    """Started late (a slow boot), the splash finds the companion's runtime
    folder and leaves the panel alone: no bus opened, on I²C or SPI."""
    (tmp_path / "companion.toml").write_text('language = "fr"\n')          # no board: found at the start
    opened = []

    def no_device(*where, **_):
        opened.append(where)
        raise FileNotFoundError("no such device")
    for name in ("DevBus", "DevSPI", "DevLines"):
        monkeypatch.setattr(splash, name, no_device)
    monkeypatch.setattr(splash.os.path, "exists", lambda path: True)        # every device node there
    monkeypatch.setattr(splash, "COMPANION_RUNNING", tmp_path)          # "running"
    assert splash.show("starting", tmp_path) is False and opened == []
    monkeypatch.setattr(splash, "COMPANION_RUNNING", tmp_path / "not-there")
    assert splash.show("starting", tmp_path) is False
    assert opened == [(1,), (0, 0)], "tried the I²C bus, then the HAT's SPI"


def test_it_waits_for_the_bus_to_appear_and_not_for_ever(tmp_path, monkeypatch):
    """Early in the boot the bus's driver may still be loading: the device
    node is waited for, until the deadline (a clock of the test's own)."""
    now = [0.0]
    monkeypatch.setattr(splash.time, "monotonic", lambda: now[0])

    def tick(seconds):
        now[0] += seconds
        if now[0] >= 0.5:
            node.touch()
    monkeypatch.setattr(splash.time, "sleep", tick)
    monkeypatch.setattr(splash, "COMPANION_RUNNING", tmp_path / "not-there")
    node = tmp_path / "i2c-1"
    assert splash.device_there(str(node), deadline=10.0) and now[0] >= 0.5
    assert not splash.device_there(str(tmp_path / "never"), deadline=now[0] + 3.0)
    assert now[0] >= 3.5 and now[0] < 3.7, "gave up at the deadline"


# -- the panel on SPI (the Waveshare HAT) --------------------------------------------------------

class MockLines:
    """DC and reset as the splash drives them, on gpiozero's mock pins
    (which the emulated SPI panel reads, as the controller reads the wires)."""

    def __init__(self, factory, levels):
        self.factory = factory
        for pin, level in levels.items():          # as DevLines asks the kernel for them: DC low, reset high
            factory.pin(pin).function = "output"
            factory.pin(pin).state = bool(level)
            factory.pin(pin).clear_states()

    def set(self, pin, value):
        self.factory.pin(pin).state = bool(value)


@pytest.fixture
def hat():
    """The Waveshare HAT's SH1106 behind an emulated spidev, DC on 24 and reset on 25."""
    from gpiozero.pins.mock import MockFactory

    from hardware.i2c_panel import EmulatedSPI

    factory = MockFactory()
    chip = EmulatedPanel("sh1106")
    spi = EmulatedSPI(chip, factory, dc=24, reset=25)
    spi.open(0, 0)
    yield chip, spi, MockLines(factory, {24: 0, 25: 1})
    factory.reset()


@pytest.mark.parametrize("lang", splash.LANGUAGES)
def test_the_hat_s_glass_shows_the_frame_over_spi(tmp_path, hat, lang):
    chip, spi, lines = hat
    (tmp_path / "companion.toml").write_text(f'language = "{lang}"\nboard = "waveshare-oled-hat"\n')
    assert splash.show("starting", tmp_path, spi=spi, lines=lines)
    want = splash.draw("starting", lang).image.convert("1").rotate(180)      # the HAT's panel sits upside down
    assert chip.on and chip.reset_count == 1, "reset first, then switched on with the frame in"
    assert ImageChops.difference(chip.image().convert("1"), want).getbbox() is None


def test_a_box_with_no_board_set_draws_on_the_hat_when_no_i2c_panel_answers(tmp_path, hat):
    """As the box chooses (wiring.md, "Which board"): the I²C panel if one
    answers at its address, else the HAT's SPI panel."""
    chip, spi, lines = hat
    (tmp_path / "companion.toml").write_text('language = "fr"\n')
    i2c_panel = EmulatedPanel("ssd1306")
    assert splash.show("growing", tmp_path, bus=i2c_panel, spi=spi, lines=lines)
    assert i2c_panel.on and spi.writes == 0, "an I²C panel answered: the SPI one is not touched"
    i2c_panel = EmulatedPanel("ssd1306")
    i2c_panel.unplugged = errno.EREMOTEIO                              # nothing answers at 0x3C
    assert splash.show("growing", tmp_path, bus=i2c_panel, spi=spi, lines=lines)
    want = splash.draw("growing", "fr").image.convert("1").rotate(180)
    assert ImageChops.difference(chip.image().convert("1"), want).getbbox() is None
    # A wired box (its own pins in the settings) never drives the HAT's pins.
    (tmp_path / "companion.toml").write_text('leds = [5, 6]\n')
    spi.writes = 0
    assert splash.show("starting", tmp_path, bus=i2c_panel, spi=spi, lines=lines) is False and spi.writes == 0


def test_on_spi_it_sends_what_luma_sends(hat):
    """The bytes on the wire, commands and data apart, are those of luma's
    own sh1106 driver on its spi interface (the set-up the companion's
    driver repeats a moment later, then the frame)."""
    from gpiozero.pins.mock import MockFactory
    from luma.core.interface.serial import spi as luma_spi
    from luma.oled.device import sh1106

    from hardware import spi_panel
    from hardware.i2c_panel import EmulatedSPI

    chip, spi, lines = hat
    ours = chip.record()
    splash.send(splash.SPIBus(spi, lines, 24), 0, splash.frame_path("starting", "en").read_bytes(), "sh1106")
    factory = MockFactory()
    try:
        theirs = EmulatedPanel("sh1106")
        transcript = theirs.record()
        bus = EmulatedSPI(theirs, factory, dc=24, reset=25)
        device = sh1106(luma_spi(spi=bus, gpio=spi_panel.GpioLines(factory), port=0, device=0,
                                 gpio_DC=24, gpio_RST=25))
        device.cleanup()
    finally:
        factory.reset()
    setup = len(splash.INIT["sh1106"])
    assert transcript[0][0] == CMD and list(transcript[0][1])[:setup] == splash.INIT["sh1106"]
    assert ours[0][0] == CMD and list(ours[0][1])[:setup] == splash.INIT["sh1106"]
    assert ours[-1] == (CMD, bytearray([splash.DISPLAY_ON])), "switched on once the frame is in"


CONFIGS = [
    {}, {"board": "wired"}, {"board": "adafruit-oled-bonnet"}, {"board": "waveshare-oled-hat"},
    {"board": "Waveshare-OLED-HAT "}, {"board": "waveshare-oled-hat", "display": {"rotate": 0}},
    {"leds": [5, 6, 13, 19]}, {"buzzer": 18}, {"buttons": {"up": 5}}, {"buttons": {"UP": 17}},
    {"display": {"driver": "sh1106"}}, {"display": {"address": "0x3D"}}, {"display": {"rotate": 2}},
    {"board": "wired", "display": {"driver": "SH1106", "port": 3, "address": 61, "rotate": 2}},
    {"board": "auto"}, {"board": ""},
]


@pytest.mark.parametrize("settings", CONFIGS, ids=[str(c) for c in CONFIGS])
@pytest.mark.parametrize("env", [None, "waveshare-oled-hat", "wired"])
def test_it_picks_the_panel_the_box_will_draw_on(tmp_path, monkeypatch, settings, env):
    """By difference with hardware/boards.py, on the companion's own reading of the settings."""
    import tomllib

    from companion.config import load
    from hardware import boards

    lines = []
    for key, value in settings.items():
        if not isinstance(value, dict):
            lines.append(f"{key} = {value!r}".replace("'", '"'))
    for key, value in settings.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            lines += [f"{k} = {v!r}".replace("'", '"') for k, v in value.items()]
    (tmp_path / "companion.toml").write_text("\n".join(lines) + "\n")
    assert tomllib.loads((tmp_path / "companion.toml").read_text()) == settings
    environ = {"COMPANION_BOARD": env} if env else {}
    for key in ("COMPANION_BOARD",):
        monkeypatch.delenv(key, raising=False)
    if env:
        monkeypatch.setenv("COMPANION_BOARD", env)
    config = load(tmp_path)
    try:
        board = boards.resolve(config)
    except boards.BoardError:
        want = []
    else:
        if board is not None:
            want = [board.panel.settings()]
        else:                           # found at the start: the I²C panel if it answers, else the HAT's
            want = [boards.auto_candidates(config, True)[0].panel.settings(),
                    boards.auto_candidates(config, False)[0].panel.settings()]
    assert splash.panels(tmp_path, environ) == want


def test_an_unknown_board_draws_nothing(tmp_path):
    (tmp_path / "companion.toml").write_text('board = "pi-hat-9000"\n')
    assert splash.panels(tmp_path, {}) == []
    assert splash.show("starting", tmp_path, bus=EmulatedPanel("ssd1306")) is False


def test_what_it_knows_of_the_box_is_the_box_s():
    from companion.config import DEFAULTS
    from hardware import boards, spi_panel

    assert splash.DEFAULT_DISPLAY == DEFAULTS["display"] and splash.DEFAULT_BUTTONS == DEFAULTS["buttons"]
    assert splash.BOARD_PANELS == {b.id: b.panel.settings() for b in boards.PLUG_ON.values()}
    assert splash.AUTO_SPI == boards.auto_candidates({}, False)[0].id
    assert (splash.SPI_IOC_WR_MODE, splash.SPI_IOC_WR_MAX_SPEED_HZ, splash.SPI_SPEED_HZ) == \
        (spi_panel.SPI_IOC_WR_MODE, spi_panel.SPI_IOC_WR_MAX_SPEED_HZ, spi_panel.BUS_SPEED_HZ)


C_CHECK = r"""
#include <linux/gpio.h>
#include <linux/spi/spidev.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    struct gpio_v2_line_request req;
    if (fread(&req, 1, sizeof req, stdin) != sizeof req) return 2;
    printf("sizes %zu %zu %zu\n", sizeof(struct gpio_v2_line_request), sizeof(struct gpio_v2_line_values),
           sizeof(struct gpiochip_info));
    printf("ioctls %lu %lu %lu %lu %lu\n", (unsigned long)GPIO_V2_GET_LINE_IOCTL,
           (unsigned long)GPIO_V2_LINE_SET_VALUES_IOCTL, (unsigned long)GPIO_GET_CHIPINFO_IOCTL,
           (unsigned long)SPI_IOC_WR_MODE, (unsigned long)SPI_IOC_WR_MAX_SPEED_HZ);
    printf("lines %u offsets %u %u consumer %s flags %llu attrs %u\n", req.num_lines, req.offsets[0],
           req.offsets[1], req.consumer, (unsigned long long)req.config.flags, req.config.num_attrs);
    for (unsigned i = 0; i < req.config.num_attrs; i++) {
        struct gpio_v2_line_config_attribute *a = &req.config.attrs[i];
        printf("attr %u %llu %llu\n", a->attr.id,
               (unsigned long long)(a->attr.id == GPIO_V2_LINE_ATTR_ID_FLAGS ? a->attr.flags : a->attr.values),
               (unsigned long long)a->mask);
    }
    printf("flag-values %llu %llu\n", (unsigned long long)GPIO_V2_LINE_FLAG_OUTPUT,
           (unsigned long long)GPIO_V2_LINE_FLAG_BIAS_PULL_UP);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None or not Path("/usr/include/linux/gpio.h").exists(),
                    reason="needs a C compiler and the kernel's headers (linux-libc-dev)")
def test_the_gpio_request_is_the_kernel_s_own_structure(tmp_path):
    """The request the splash hands the kernel, read back by a C program
    through linux/gpio.h: the lines, their first levels, the reset line's
    pull-up, and every size and ioctl number."""
    source = tmp_path / "check.c"
    source.write_text(C_CHECK)
    subprocess.run(["cc", "-o", str(tmp_path / "check"), str(source)], check=True, timeout=120)
    request = splash.line_request({24: 0, 25: 1}, pull_up=(25,))
    out = subprocess.run([str(tmp_path / "check")], input=request, capture_output=True, check=True,
                         timeout=60).stdout.decode().splitlines()
    assert out[0].split()[1:] == [str(splash.LINE_REQUEST.size), str(splash.LINE_VALUES.size),
                                  str(splash.CHIP_INFO.size)]
    assert out[1].split()[1:] == [str(n) for n in (splash.GPIO_V2_GET_LINE_IOCTL,
                                                   splash.GPIO_V2_LINE_SET_VALUES_IOCTL,
                                                   splash.GPIO_GET_CHIPINFO_IOCTL, splash.SPI_IOC_WR_MODE,
                                                   splash.SPI_IOC_WR_MAX_SPEED_HZ)]
    output_flag, pull_up = (int(n) for n in out[-1].split()[1:])
    assert out[2].split() == ["lines", "2", "offsets", "24", "25", "consumer", "companion-splash",
                              "flags", str(output_flag), "attrs", "2"]
    attrs = [tuple(int(n) for n in line.split()[1:]) for line in out[3:-1]]
    # DC low and reset high from the start (both lines); the reset line (the second) pulled up.
    assert attrs == [(2, 0b10, 0b11), (1, output_flag | pull_up, 0b10)]


def test_it_waits_for_a_bus_only_on_a_pi(tmp_path, monkeypatch):
    """A VM or a PC never gets the Pi's buses: there the splash (and the
    first boot's unit ordered after it) waits for nothing."""
    waits = []
    monkeypatch.setattr(splash, "show", lambda message, data_dir, wait_s: waits.append(wait_s))
    monkeypatch.setattr(splash, "MODEL", tmp_path / "model")
    splash.main(["starting", "--data", str(tmp_path)])
    (tmp_path / "model").write_bytes(b"Raspberry Pi Zero 2 W Rev 1.0\0")
    splash.main(["starting", "--data", str(tmp_path)])
    splash.main(["starting", "--data", str(tmp_path), "--wait", "0"])
    assert waits == [0.0, splash.WAIT_S, 0.0]
