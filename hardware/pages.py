"""luma.oled's SSD1306 and SH1106 drivers, sending only what changed.

The controllers keep the picture in *pages*: page ``p`` is a row of 128
bytes, and bit ``k`` of byte ``x`` is the pixel at column ``x``, row
``8p + k``.  luma.oled's own ``display()`` builds those bytes pixel by pixel
in Python (8192 steps a frame) and sends all 1024 of them every time.  On a
Pi Zero 2 W that is ~30 ms of CPU a frame, and 1024 bytes take ~23 ms on a
400 kHz I²C bus (~92 ms at the Pi's default 100 kHz): a cursor move would
cost 50 ms before the player sees it.

These subclasses keep luma's classes (init sequence, contrast, rotation,
errors, cleanup) and replace ``display()`` only:

* :func:`page_bytes` lets Pillow pack the frame into the page layout in C
  (transpose, so that a panel column becomes an image row, then pack 8
  pixels a byte, first pixel in the lowest bit);
* :func:`windows` compares those bytes with what the panel already holds,
  page by page, using whole-page integer XORs (no Python loop per byte),
  and gives the smallest column window of each changed page — neighbouring
  pages with overlapping windows are sent as one;
* only those windows go on the bus.  A cursor move in a list is two pages;
  an unchanged frame sends nothing.

What the panel holds is forgotten when a transfer fails (a loose wire):
the next frame is then sent whole.
"""

from __future__ import annotations

from PIL import Image
from luma.oled.device import sh1106 as _sh1106, ssd1306 as _ssd1306

COMMAND_COST = 8        # bytes a new window costs on the bus: its command transfer


def page_bytes(image: Image.Image, pages: int) -> bytes:
    """The controller memory for a 1-bit ``image`` (already rotated):
    page ``p``, column ``x`` at index ``p * width + x``."""
    packed = image.transpose(Image.Transpose.TRANSPOSE).tobytes("raw", "1;R")
    # Row x of the transposed image is column x: its `pages` bytes, page 0 first.
    return b"".join(packed[p::pages] for p in range(pages))


def windows(old: bytes | None, new: bytes, width: int, pages: int) -> list[tuple[int, int, int, int]]:
    """``(first_page, last_page, first_column, last_column)`` windows that
    cover every byte of ``new`` that differs from ``old`` (None: everything)."""
    if old is None:
        return [(0, pages - 1, 0, width - 1)]
    changed = []
    for p in range(pages):
        a = int.from_bytes(old[p * width:(p + 1) * width], "big")
        b = int.from_bytes(new[p * width:(p + 1) * width], "big")
        diff = a ^ b
        if diff:
            # Big-endian: column x is byte (width - 1 - x) counted from the low end.
            first = width - 1 - (diff.bit_length() - 1) // 8
            last = width - 1 - ((diff & -diff).bit_length() - 1) // 8
            changed.append([p, p, first, last])
    merged: list[list[int]] = []
    for w in changed:
        if merged and merged[-1][1] == w[0] - 1:
            m = merged[-1]
            lo, hi = min(m[2], w[2]), max(m[3], w[3])
            together = (hi - lo + 1) * (w[1] - m[0] + 1)
            apart = (m[3] - m[2] + 1) * (m[1] - m[0] + 1) + (w[3] - w[2] + 1) + COMMAND_COST
            if together <= apart:
                m[1], m[2], m[3] = w[1], lo, hi
                continue
        merged.append(w)
    return [tuple(w) for w in merged]


def _window_data(memory: bytes, width: int, window) -> bytes:
    p0, p1, c0, c1 = window
    return b"".join(memory[p * width + c0:p * width + c1 + 1] for p in range(p0, p1 + 1))


class ssd1306(_ssd1306):
    """luma's SSD1306 (horizontal addressing mode): one column/page window per change."""

    _held: bytes | None = None      # what the panel's memory holds, as last sent

    def display(self, image: Image.Image) -> None:
        assert image.mode == self.mode
        assert image.size == self.size
        new = page_bytes(self.preprocess(image), self._pages)
        held, self._held = self._held, None          # unknown until the transfer ends
        for window in windows(held, new, self._w, self._pages):
            p0, p1, c0, c1 = window
            self.command(self._const.COLUMNADDR, self._colstart + c0, self._colstart + c1,
                         self._const.PAGEADDR, p0, p1)
            self.data(_window_data(new, self._w, window))
        self._held = new


class sh1106(_sh1106):
    """luma's SH1106 (page addressing mode): the changed columns of each changed page."""

    _held: bytes | None = None

    def display(self, image: Image.Image) -> None:
        assert image.mode == self.mode
        assert image.size == self.size
        new = page_bytes(self.preprocess(image), self._pages)
        held, self._held = self._held, None
        for p0, p1, c0, c1 in windows(held, new, self._w, self._pages):
            column = c0 + self._page_address_offset
            for p in range(p0, p1 + 1):          # no window here: one page at a time
                self.command(0xB0 + p, column & 0x0F, 0x10 | (column >> 4))
                self.data(new[p * self._w + c0:p * self._w + c1 + 1])
        self._held = new
