"""An SSD1306 / SH1106 panel emulated at the I2C bus (and at the SPI bus), for luma's real drivers.

luma's ``i2c`` interface accepts any ``bus`` object with
``write_i2c_block_data(addr, mode, data)``: mode ``0x00`` carries commands,
``0x40`` display data (at most 32 bytes a call when the bus is not smbus2's
own).  :class:`EmulatedPanel` is such a bus.  It decodes the controller's
command stream the way the chip does (addressing mode, column and page
windows, the SH1106's page addressing and its 132-column memory, contrast,
display on/off, inversion, segment remap and COM scan direction, start
line) into the controller's display memory, and :meth:`image` reads back
what the glass shows, as the 128x64 picture a person in front of the box
sees.  So a test runs ``luma.oled.device.ssd1306(i2c(bus=panel, address=0x3C))``
unchanged and compares frames pixel for pixel.

It also counts what went over the wire (blocks and bytes, for the
benchmark) and can fail like a loose wire: :meth:`fail` makes a later write
raise ``OSError`` with errno 121 (EREMOTEIO: nothing acknowledged) or 110
(ETIMEDOUT: the bus hung), at start or in the middle of a frame.

:class:`EmulatedSPI` puts the same controller behind 4-wire SPI (spidev's
interface, the DC and reset lines on gpiozero's mock pins), for the
boards whose panel is on SPI (hardware/boards.py).
"""

from __future__ import annotations

import errno
import os
import threading

from PIL import Image

WIDTH, HEIGHT = 128, 64
PAGES = HEIGHT // 8
CMD, DATA = 0x00, 0x40

# Commands followed by parameter bytes, and how many.  0x20 (memory mode)
# takes one on the SSD1306 only; the SH1106 has no such command (luma sends
# a bare 0x20 in its SH1106 set-up, which the chip ignores).
_PARAMS = {0x81: 1, 0xA8: 1, 0xD3: 1, 0xD5: 1, 0xD9: 1, 0xDA: 1, 0xDB: 1, 0x8D: 1, 0xAD: 1}
_SSD1306_PARAMS = {0x20: 1, 0x21: 2, 0x22: 2, 0x26: 6, 0x27: 6, 0x29: 5, 0x2A: 5, 0xA3: 2}
HORIZONTAL, VERTICAL, PAGE = 0, 1, 2


class EmulatedPanel:
    """A 128x64 OLED controller behind an I2C address (see the module docstring)."""

    def __init__(self, controller: str = "ssd1306", address: int = 0x3C):
        if controller not in ("ssd1306", "sh1106"):
            raise ValueError(f"unknown controller {controller!r}")
        self.controller = controller
        self.address = address
        self.columns = 132 if controller == "sh1106" else 128
        self.ram = [bytearray(self.columns) for _ in range(PAGES)]   # random at power-on: zero here
        self._lock = threading.Lock()
        self._power_on()
        # What went over the wire.
        self.blocks = 0
        self.bytes = 0                         # control byte + payload of every block
        self.data_bytes = 0
        self.command_bytes = 0
        self.writes_to_fail: list[tuple[int, int]] = []   # (writes to let through first, errno)
        self.unplugged: int | None = None      # an errno: every write fails with it until cleared
        self.failures = 0
        # Every command and data byte in order, runs of one kind merged, when
        # a test asks for it (``record()``): what luma's driver sent, whatever the bus.
        self.transcript: list[tuple[int, bytearray]] | None = None
        self.reset_count = 0

    def _power_on(self) -> None:
        """The registers' power-on (and reset) state, from the datasheets:
        display off, page addressing, no remap.  The display memory is not
        cleared by a reset."""
        self._pending: list[int] = []          # a command waiting for its parameters
        self.on = False
        self.contrast = 0x7F
        self.inverted = False
        self.all_on = False
        self.remap = False                     # A1: column 127 (131) drives SEG0
        self.scan_reversed = False             # C8: COM scan from COM63 to COM0
        self.start_line = 0
        self.display_offset = 0
        self.mode = PAGE
        self.col_window = (0, self.columns - 1)
        self.page_window = (0, PAGES - 1)
        self.column = 0
        self.page = 0

    def record(self) -> list:
        """Start keeping :attr:`transcript` (a fresh one); returns it."""
        self.transcript = []
        return self.transcript

    # -- the bus ----------------------------------------------------------------------
    def write_i2c_block_data(self, addr: int, mode: int, data) -> None:
        with self._lock:
            if addr != self.address:
                raise OSError(errno.EREMOTEIO, "Remote I/O error")       # nobody acknowledges
            self._fault()
            data = [int(b) & 0xFF for b in data]
            if len(data) > 32:
                raise OSError(errno.EINVAL, "SMBus block longer than 32 bytes")
            if mode not in (CMD, DATA):
                raise OSError(errno.EINVAL, f"control byte 0x{mode:02X}")
            self.blocks += 1
            self.bytes += 1 + len(data)
            self._feed(mode, data)

    def _fault(self) -> None:
        """Raise the fault asked for, if this write is the one (the lock held)."""
        if self.unplugged is not None:
            self.failures += 1
            raise OSError(self.unplugged, os.strerror(self.unplugged))
        if self.writes_to_fail:
            left, code = self.writes_to_fail[0]
            if left <= 0:
                self.writes_to_fail.pop(0)
                self.failures += 1
                raise OSError(code, os.strerror(code))
            self.writes_to_fail[0] = (left - 1, code)

    def _feed(self, mode: int, data: list[int]) -> None:
        """Bytes for the controller: commands (``CMD``) or display data (``DATA``)."""
        if self.transcript is not None:
            if self.transcript and self.transcript[-1][0] == mode:
                self.transcript[-1][1].extend(data)
            else:
                self.transcript.append((mode, bytearray(data)))
        if mode == CMD:
            self.command_bytes += len(data)
            for byte in data:
                self._command(byte)
        else:
            self.data_bytes += len(data)
            for byte in data:
                self._data(byte)

    def reset(self) -> None:
        """The reset line pulled low: the controller back to its power-on state (its memory is kept)."""
        with self._lock:
            self._power_on()
            self.reset_count += 1

    def fail(self, code: int = errno.EREMOTEIO, after_writes: int = 0) -> None:
        """Make a later write raise ``OSError(code)``: the next one, or the
        one after ``after_writes`` more have gone through."""
        with self._lock:
            self.writes_to_fail.append((after_writes, code))

    def counters(self) -> dict:
        return {"blocks": self.blocks, "bytes": self.bytes, "data": self.data_bytes, "commands": self.command_bytes}

    # -- the controller -----------------------------------------------------------------
    def _command(self, byte: int) -> None:
        if self._pending:
            self._pending.append(byte)
            wanted = self._params(self._pending[0])
            if len(self._pending) - 1 >= wanted:
                command, *args = self._pending
                self._pending = []
                self._with_params(command, args)
            return
        if self._params(byte):
            self._pending = [byte]
            return
        if byte == 0xAE or byte == 0xAF:
            self.on = byte == 0xAF
        elif byte == 0xA0 or byte == 0xA1:
            self.remap = byte == 0xA1
        elif byte == 0xC0 or byte == 0xC8:
            self.scan_reversed = byte == 0xC8
        elif byte == 0xA6 or byte == 0xA7:
            self.inverted = byte == 0xA7
        elif byte == 0xA4 or byte == 0xA5:
            self.all_on = byte == 0xA5
        elif 0x40 <= byte <= 0x7F:
            self.start_line = byte - 0x40
        elif byte <= 0x0F:                             # lower nibble of the column (page mode)
            self.column = (self.column & 0xF0) | byte
        elif 0x10 <= byte <= 0x1F:                     # upper nibble
            self.column = (self.column & 0x0F) | ((byte & 0x0F) << 4)
        elif 0xB0 <= byte <= 0xB7:
            self.page = byte - 0xB0
        # anything else (scrolling off, NOP 0xE3, the SH1106's 0x20...) changes nothing drawn

    def _params(self, command: int) -> int:
        if command in _PARAMS:
            return _PARAMS[command]
        if self.controller == "ssd1306":
            return _SSD1306_PARAMS.get(command, 0)
        return 0

    def _with_params(self, command: int, args: list[int]) -> None:
        if command == 0x81:
            self.contrast = args[0]
        elif command == 0xD3:
            self.display_offset = args[0] & 0x3F
        elif command == 0x20:
            self.mode = args[0] & 0x03
        elif command == 0x21:
            self.col_window = (args[0] & 0x7F, args[1] & 0x7F)
            self.column = self.col_window[0]
        elif command == 0x22:
            self.page_window = (args[0] & 0x07, args[1] & 0x07)
            self.page = self.page_window[0]

    def _data(self, byte: int) -> None:
        if self.column < self.columns and self.page < PAGES:
            self.ram[self.page][self.column] = byte
        if self.controller == "sh1106" or self.mode == PAGE:
            self.column = (self.column + 1) % self.columns if self.controller == "ssd1306" else min(self.column + 1, self.columns)
            return
        first_col, last_col = self.col_window
        first_page, last_page = self.page_window
        if self.mode == HORIZONTAL:
            if self.column >= last_col:
                self.column = first_col
                self.page = first_page if self.page >= last_page else self.page + 1
            else:
                self.column += 1
        else:                                          # vertical
            if self.page >= last_page:
                self.page = first_page
                self.column = first_col if self.column >= last_col else self.column + 1
            else:
                self.page += 1

    # -- what the glass shows -------------------------------------------------------------
    def ram_pixel(self, column: int, row: int) -> bool:
        return bool(self.ram[row // 8][column] >> (row % 8) & 1)

    def image(self) -> Image.Image:
        """The picture in front of the panel: 128x64, mode "1", dark when off.

        Panel modules are wired so that luma's set-up (segment remap on, COM
        scan reversed) shows its frame upright: a pixel of the glass at
        (x, y) is the memory's column x (counted from the SH1106's 2-column
        margin) and row y, both read the other way round when the remap or
        the scan direction is changed."""
        with self._lock:
            out = Image.new("1", (WIDTH, HEIGHT), 0)
            if not self.on:
                return out
            margin = (self.columns - WIDTH) // 2
            px = out.load()
            for y in range(HEIGHT):
                com = y if self.scan_reversed else HEIGHT - 1 - y
                row = (com + self.start_line + self.display_offset) % HEIGHT
                for x in range(WIDTH):
                    column = margin + x if self.remap else self.columns - 1 - margin - x
                    lit = True if self.all_on else self.ram_pixel(column, row) != self.inverted
                    if lit:
                        px[x, y] = 255
            return out


class EmulatedSPI:
    """The same controller behind 4-wire SPI: a spidev-compatible bus for
    luma's ``spi`` interface, with the DC and reset lines read from
    gpiozero's mock pins.

    ``EmulatedSPI(panel, factory, dc=24, reset=25)``: ``open``,
    ``max_speed_hz``, ``mode``, ``writebytes`` and ``close`` as spidev's;
    each write goes to the controller as commands while the DC pin is low,
    as display data while it is high (the SH1106 and SSD1306 sample it at
    each byte's last clock), and a low level seen on the reset pin since
    the last write resets the controller first.  Faults are the panel's
    (:meth:`EmulatedPanel.fail`, :attr:`EmulatedPanel.unplugged`: an SPI
    write that fails, a controller driver gone) plus ``missing``: no
    ``/dev/spidevB.D`` at all (SPI not turned on), raised at ``open``."""

    def __init__(self, panel: EmulatedPanel, factory, dc: int = 24, reset: int | None = 25):
        self.panel = panel
        self.factory = factory
        self.dc, self.reset_pin = dc, reset
        self.missing = False
        self.opened: tuple[int, int] | None = None
        self.max_speed_hz = 500_000
        self.mode = 0
        self.writes = 0
        self._reset_seen = 0

    def open(self, port: int, device: int) -> None:
        if self.missing:
            raise FileNotFoundError(errno.ENOENT, f"No such file or directory: '/dev/spidev{port}.{device}'")
        self.opened = (port, device)

    def close(self) -> None:
        self.opened = None

    def writebytes(self, data) -> None:
        if self.opened is None:
            raise OSError(errno.EBADF, "spidev not open")
        data = [int(b) & 0xFF for b in data]
        if len(data) > 4096:                  # spidev's bufsiz
            raise OSError(errno.EMSGSIZE, "Message too long")
        self._follow_reset()
        panel = self.panel
        with panel._lock:
            panel._fault()
            panel.blocks += 1
            panel.bytes += len(data)
            self.writes += 1
            panel._feed(DATA if self.factory.pin(self.dc).state else CMD, data)

    def _follow_reset(self) -> None:
        """A low level on the reset pin since the last look: the chip was reset."""
        if self.reset_pin is None:
            return
        states = self.factory.pin(self.reset_pin).states
        new, self._reset_seen = states[self._reset_seen:], len(states)
        if any(not state.state for state in new):
            self.panel.reset()
