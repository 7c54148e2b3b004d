"""hardware.pages: the page-diffing SSD1306/SH1106 drivers.

The oracle is luma.oled's own driver: its ``display()`` sends the whole
controller memory, computed pixel by pixel, so the bytes it puts on a bus
are what our packing must produce.  A bus object (luma's ``i2c(bus=...)``
accepts any object with ``write_i2c_block_data``) records the transfers;
replaying our windows into a 1024-byte memory must give the new frame.
"""

from __future__ import annotations

import random

import pytest
from luma.core.interface.serial import i2c
from luma.oled.device import sh1106 as luma_sh1106, ssd1306 as luma_ssd1306
from PIL import Image, ImageDraw

from hardware.pages import page_bytes, sh1106, ssd1306, windows


class RecordingBus:
    def __init__(self):
        self.calls: list[tuple[int, list[int]]] = []

    def write_i2c_block_data(self, address, mode, data):
        self.calls.append((mode, list(data)))

    def data_bytes(self) -> bytes:
        return bytes(b for mode, data in self.calls if mode == 0x40 for b in data)


def frame(seed: int) -> Image.Image:
    rng = random.Random(seed)
    image = Image.new("1", (128, 64))
    draw = ImageDraw.Draw(image)
    for _ in range(4):
        draw.text((rng.randrange(100), rng.randrange(54)), "Chloé 42", fill=255)
    x, y = rng.randrange(100), rng.randrange(50)
    draw.rectangle((x, y, x + rng.randrange(28), y + rng.randrange(14)), fill=255)
    return image


@pytest.mark.parametrize("rotate", [0, 2])
def test_page_bytes_are_what_luma_sends(rotate):
    bus = RecordingBus()
    luma = luma_ssd1306(i2c(bus=bus, address=0x3C), rotate=rotate)
    ours = ssd1306(i2c(bus=RecordingBus(), address=0x3C), rotate=rotate)
    for seed in range(10):
        image = frame(seed)
        bus.calls.clear()
        luma.display(image)
        assert page_bytes(ours.preprocess(image), 8) == bus.data_bytes()


def test_windows_cover_every_change_and_nothing_when_equal():
    old = None
    for seed in range(30):
        new = page_bytes(frame(seed), 8)
        memory = bytearray(old or bytes(1024))
        for p0, p1, c0, c1 in windows(old, new, 128, 8):
            for p in range(p0, p1 + 1):
                memory[p * 128 + c0:p * 128 + c1 + 1] = new[p * 128 + c0:p * 128 + c1 + 1]
        assert bytes(memory) == new
        old = new
    assert windows(old, old, 128, 8) == []


def test_ssd1306_sends_only_the_changed_window_then_all_after_a_fault():
    bus = RecordingBus()
    device = ssd1306(i2c(bus=bus, address=0x3C))
    image = frame(1)
    device.display(image)
    bus.calls.clear()
    moved = image.copy()
    ImageDraw.Draw(moved).rectangle((10, 20, 13, 22), fill=255)     # rows 20-22: page 2 only
    device.display(moved)
    commands = [data for mode, data in bus.calls if mode == 0x00]
    assert commands == [[0x21, 10, 13, 0x22, 2, 2]]                  # COLUMNADDR 10-13, PAGEADDR 2-2
    assert bus.data_bytes() == page_bytes(moved, 8)[2 * 128 + 10:2 * 128 + 14]
    bus.calls.clear()
    device.display(moved)
    assert bus.calls == []                                          # an unchanged frame costs nothing

    class Failing(RecordingBus):
        def write_i2c_block_data(self, address, mode, data):
            raise OSError(121, "Remote I/O error")
    device._serial_interface._bus = Failing()
    with pytest.raises(Exception):
        device.display(image)
    device._serial_interface._bus = bus
    bus.calls.clear()
    device.display(image)
    assert len(bus.data_bytes()) == 1024                             # not knowing the panel: everything


def sh1106_memory(calls, memory: bytearray) -> bytearray:
    """Apply SH1106 page-mode writes (page, column low/high commands, then data)."""
    page = column = 0
    for mode, data in calls:
        if mode == 0x00 and len(data) == 3 and 0xB0 <= data[0] <= 0xB7:
            page, column = data[0] - 0xB0, (data[1] & 0x0F) | ((data[2] & 0x0F) << 4)
        elif mode == 0x40:
            for b in data:
                memory[page * 128 + column - 2] = b      # the 132-column RAM, offset 2
                column += 1
    return memory


def test_sh1106_writes_the_changed_columns_of_each_page():
    bus = RecordingBus()
    device = sh1106(i2c(bus=bus, address=0x3C))
    memory = sh1106_memory(bus.calls, bytearray(1024))
    luma_bus = RecordingBus()
    luma_sh1106(i2c(bus=luma_bus, address=0x3C)).display(frame(2))
    bus.calls.clear()
    device.display(frame(2))
    assert sh1106_memory(bus.calls, memory) == luma_bus.data_bytes()[-1024:]
    bus.calls.clear()
    moved = frame(2)
    ImageDraw.Draw(moved).rectangle((0, 40, 127, 47), fill=255)      # page 5, every column lit
    device.display(moved)
    commands = [data for mode, data in bus.calls if mode == 0x00]
    assert commands == [[0xB5, 0x02, 0x10]]                          # page 5, column 0 + offset 2
    assert bus.data_bytes() == b"\xff" * 128
    assert sh1106_memory(bus.calls, memory) == page_bytes(moved, 8)
