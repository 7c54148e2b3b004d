"""The panel on SPI: luma's real drivers through luma's ``spi`` interface,
on an SPI bus emulated at the controller (hardware/i2c_panel.py,
``EmulatedSPI``) with the DC and reset lines on gpiozero's mock pins.

The same frames sent on I²C and on SPI must reach the controller as the
same bytes (commands and data, in order), and the same glass; the box's
own path (only what changed, the retry after a fault, the notice that says
what to check) is the I²C one.
"""

from __future__ import annotations

import errno
import os

import pytest
from gpiozero.pins.mock import MockFactory
from luma.core.interface.serial import i2c
from luma.oled.device import sh1106, ssd1306

from hardware import boards, spi_panel
from hardware.display import NO_SPI_DISPLAY, make_device, open_device
from hardware.i2c_panel import CMD, EmulatedPanel, EmulatedSPI
from hardware.testing import box_config

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)
from test_oled_driver import glass_shows, sample_frame, wait_until

DRIVERS = {"ssd1306": ssd1306, "sh1106": sh1106}
HAT = boards.WAVESHARE.panel


def frames():
    """A few frames, the last ones changing a little (the diff path)."""
    from hardware import draw

    first = sample_frame()
    second = first.copy()
    c = draw.Canvas()
    c.header("Menu", "")
    c.row(14, "Back to game", True)
    c.row(27, "New game", False)
    third = c.image
    fourth = third.copy()
    fourth.paste(0, (0, 14, 128, 40))
    return [first, second, third, fourth]


def spi_panel_on(controller, factory, panel=HAT):
    chip = EmulatedPanel(controller)
    bus = EmulatedSPI(chip, factory, dc=panel.dc, reset=panel.reset)
    return chip, bus


@pytest.mark.parametrize("ours", [False, True], ids=["luma's own", "only what changed"])
@pytest.mark.parametrize("controller", list(DRIVERS))
def test_spi_and_i2c_carry_the_same_bytes_and_draw_the_same_glass(controller, ours):
    factory = MockFactory()
    try:
        over_i2c = EmulatedPanel(controller)
        over_spi, bus = spi_panel_on(controller, factory)
        sent = over_i2c.record(), over_spi.record()
        serials = (i2c(bus=over_i2c, address=0x3C), spi_panel.serial(HAT, factory, bus=bus))
        if ours:
            devices = [make_device(controller, s) for s in serials]
        else:
            devices = [DRIVERS[controller](s, width=128, height=64) for s in serials]
        assert over_spi.reset_count == 1, "the reset line was pulsed before the set-up"
        for frame in frames():
            for device in devices:
                device.display(frame)
            assert sent[0] == sent[1], "the same commands and data, in the same order"
            assert glass_shows(over_spi, frame) and glass_shows(over_i2c, frame)
        for device in devices:
            device.contrast(0x20)
            device.hide()
        assert sent[0] == sent[1] and over_spi.contrast == 0x20 and not over_spi.on
        kinds = {kind for kind, _ in sent[1]}
        assert kinds == {CMD, 0x40}
        assert bus.opened == (0, 0) and bus.max_speed_hz == spi_panel.BUS_SPEED_HZ
        for device in devices:
            device.cleanup()
        assert bus.opened is None
        assert factory.pin(24).function == "input", "the DC line is released with the panel"
    finally:
        factory.reset()


def test_the_emulated_spi_bus_reads_dc_and_can_fail():
    """It can fail: data written while DC is low is taken as commands."""
    factory = MockFactory()
    try:
        chip, bus = spi_panel_on("sh1106", factory)
        device = make_device("sh1106", spi_panel.serial(HAT, factory, bus=bus))
        frame = sample_frame()
        device.display(frame)
        assert glass_shows(chip, frame)
        lines = device._serial_interface._gpio
        lines.output(24, 0)                                   # DC low: the "data" is now commands
        bus.writebytes([0xAE])                                # display off
        assert not chip.on
        chip.fail(errno.EIO)
        with pytest.raises(OSError):
            device.display(frame.rotate(180))
        device.cleanup()
    finally:
        factory.reset()


def hat_box(make_box, factory, controller="sh1106", notice_s=10.0, retry_s=0.05):
    chip, bus = spi_panel_on(controller, factory)
    config = box_config(board="waveshare-oled-hat", display={"retry_s": retry_s, "notice_s": notice_s})
    opened = []

    def opener():
        device = open_device(config, False, panel=boards.WAVESHARE.panel, factory=factory, spi_bus=bus)
        opened.append(device)
        return device
    box = make_box(config, display_factory=opener)
    return box, chip, bus, opened


def test_every_frame_of_a_hat_box_reaches_its_spi_glass(make_box, mock_factory, session):
    box, chip, bus, _ = hat_box(make_box, mock_factory)
    assert glass_shows(chip, box.frame.image, rotate=2), "the HAT's panel is turned: rotate 2"
    assert mock_factory.pin(24).function == "output" and mock_factory.pin(25).function == "output"
    box.press_pin(13)                                             # the menu
    assert glass_shows(chip, box.frame.image, rotate=2)
    before = chip.counters()
    box.press_pin(19)
    moved = {k: chip.counters()[k] - before[k] for k in before}
    assert 0 < moved["data"] <= 4 * 128 + 32, "only what changed goes over SPI too"
    for pin in (19, 6, 13, 16):
        box.press_pin(pin)
        assert glass_shows(chip, box.frame.image, rotate=2), box.frame.texts
    session.submit({"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]})
    box.flush()
    assert glass_shows(chip, box.frame.image, rotate=2)


@pytest.mark.parametrize("code", [errno.EIO, errno.ESHUTDOWN], ids=["EIO", "ESHUTDOWN"])
def test_a_failed_spi_write_is_survived_and_the_panel_taken_back_whole(make_box, mock_factory, code):
    box, chip, bus, opened = hat_box(make_box, mock_factory)
    box.press_pin(13)                                             # the menu
    chip.fail(code, after_writes=1)                               # the next frame breaks off
    box.press_pin(19)
    assert chip.failures == 1
    box.press_pin(19)                                             # pressed while the panel is reopened
    assert box.app.layers[-1].cursor == 2
    assert wait_until(lambda: box.screen.device is not None and len(opened) == 2), "not reopened"
    box.flush()
    assert glass_shows(chip, box.frame.image, rotate=2), "the current frame again, whole"
    assert chip.reset_count == 2, "the reopened panel was reset and set up again"
    box.press_pin(6)
    assert glass_shows(chip, box.frame.image, rotate=2)


def test_spi_off_at_start_is_reported_with_what_to_check_then_found(make_box, mock_factory, session):
    chip, bus = spi_panel_on("sh1106", mock_factory)
    bus.missing = True                                            # no /dev/spidev0.0: SPI not turned on
    config = box_config(board="waveshare-oled-hat", display={"retry_s": 0.05, "notice_s": 0.2})
    box = make_box(config, display_factory=lambda: open_device(
        config, False, panel=boards.WAVESHARE.panel, factory=mock_factory, spi_bus=bus))
    assert box.screen.device is None
    assert mock_factory.pin(24).function == "input", "no line kept by a panel that is not there"
    assert wait_until(lambda: session.table.notices), "no notice"
    [(template, params)] = session.table.notices
    assert template == NO_SPI_DISPLAY and params["error"] == "no SPI device (SPI off?)"
    from companion.i18n import gettext

    for language in ("en", "fr"):
        text = gettext(template, language, **params)
        assert "/dev/spidev0.0" in text and "dtparam=spi=on" in text
    bus.missing = False
    assert wait_until(lambda: box.screen.device is not None and not session.table.notices)
    box.press_pin(13)
    assert glass_shows(chip, box.frame.image, rotate=2) and "Menu" in box.frame.texts


def test_the_kernels_spidev_is_written_in_its_buffers_size(tmp_path):
    """KernelSPI's writes, on a plain file standing in for /dev/spidev0.0."""
    bus = spi_panel.KernelSPI()
    path = tmp_path / "spidev"
    bus.fd = os.open(path, os.O_RDWR | os.O_CREAT)
    bus.writebytes(list(range(256)) * 20)                        # 5120 bytes: two transfers
    bus.close()
    assert path.read_bytes() == bytes(range(256)) * 20 and bus.fd is None
    with pytest.raises(FileNotFoundError):
        spi_panel.KernelSPI().open(9, 9)                          # no such bus: luma says DeviceNotFoundError


def test_install_turns_spi_on_once_and_the_documented_undo_removes_it(tmp_path):
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    config = tmp_path / "config.txt"
    original = "# Pi OS\ndtparam=audio=on\n[pi4]\narm_boost=1\n"
    config.write_text(original)
    for flag in ("--i2c-only", "--spi-only", "--spi-only"):      # a second run changes nothing
        run = subprocess.run(["bash", str(root / "systemd/install.sh"), flag, str(config)],
                             capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
    text = config.read_text()
    assert text.count("dtparam=spi=on") == 1
    assert text.rstrip().splitlines()[-2:] == ["[all]", "dtparam=spi=on"], "after any [pi4]-like section"
    subprocess.run(["sed", "-i", "/^# companion: SPI/,+2d", str(config)], check=True)
    assert "spi" not in config.read_text() and "i2c_arm=on" in config.read_text(), "each undone alone"
    image = (root / "systemd/image/build").read_text()
    assert "dtparam=spi=on" in image and "spidev" in (root / "systemd/image/modules-load.conf").read_text()
    assert "DeviceAllow=char-spi rw" in (root / "systemd/companion.service").read_text()
