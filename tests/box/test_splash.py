"""The panel's first words (hardware/splash.py): drawn by the box's own code,
shipped as the controller's bytes, sent with the standard library alone."""

import subprocess
import sys

import pytest
from PIL import Image, ImageChops

from hardware import splash
from hardware.i2c_panel import EmulatedPanel
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
        f"sys.argv = ['splash.py', 'starting', '--data', {str(tmp_path)!r}]\n"
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
    folder and leaves the panel alone."""
    (tmp_path / "companion.toml").write_text('[display]\nport = 97\n')
    opened = []

    def no_bus(port):
        opened.append(port)
        raise FileNotFoundError(f"/dev/i2c-{port}")
    monkeypatch.setattr(splash, "DevBus", no_bus)
    monkeypatch.setattr(splash, "COMPANION_RUNNING", tmp_path)          # "running"
    assert splash.show("starting", tmp_path) is False and opened == []
    monkeypatch.setattr(splash, "COMPANION_RUNNING", tmp_path / "not-there")
    assert splash.show("starting", tmp_path) is False and opened == [97]   # tried the bus

