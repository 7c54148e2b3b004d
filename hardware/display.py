"""The OLED panel, and living without it.

The box always renders its frames to an in-memory image (the web mirror and
the tests read that); the panel, when there is one, is only where a frame is
*also* sent.  A missing panel at start (no I2C bus, nothing at the address,
luma not installed) or a panel that starts failing (a loose wire: ``OSError``)
never stops the companion: :class:`Screen` logs it once, drops the device and
starts a retry thread that sleeps on an :class:`threading.Event` between
attempts (every ``retry_s`` seconds, 5 by default).  When the panel answers
again it is handed back to the box's worker, which shows the current frame.
No thread runs while the panel works.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from typing import Callable

from companion.i18n import N_

log = logging.getLogger("hardware.display")

try:
    from luma.core.error import DeviceNotFoundError, DevicePermissionError, Error as LumaError
except ImportError:  # pragma: no cover - luma is a dependency; keep the box alive anyway
    class LumaError(Exception):
        pass

    class DeviceNotFoundError(LumaError):
        pass

    class DevicePermissionError(LumaError):
        pass

# What "the panel is not there / stopped answering" looks like.
DISPLAY_ERRORS = (LumaError, ImportError, OSError)
DRIVERS = ("ssd1306", "sh1106")
RETRY_S = 5.0


# Told to the table (phones and, once it is back, the panel) when the panel
# stays missing longer than NOTICE_AFTER_S: short glitches only go to the log.
NO_DISPLAY = N_("The screen does not answer ({error}). Check its four wires; that I²C is on "
                "(sudo raspi-config nonint do_i2c 0, then reboot); that /dev/i2c-{port} exists; "
                "and that 'i2cdetect -y {port}' shows {address}. The box goes on and retries.")
NOTICE_AFTER_S = 10.0
NO_SPI_DISPLAY = N_("The screen does not answer ({error}). Check that the board sits on all 40 pins of "
                    "the header; that SPI is on (dtparam=spi=on in config.txt, then reboot); and that "
                    "/dev/spidev{port}.{device} exists. The box goes on and retries.")


def describe(exc: BaseException) -> str:
    """A display error in a few words a person can act on (not just its type)."""
    code = getattr(exc, "errno", None)
    if code == errno.EREMOTEIO or "not found on address" in str(exc):
        return "nothing answers at its address"
    if code == errno.ETIMEDOUT:
        return "the I²C bus timed out"
    if code == errno.ENOENT or "SPI device not found" in str(exc):
        return "no SPI device (SPI off?)"
    if isinstance(exc, ImportError):
        return f"missing library: {exc.name or exc}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class DisplayConfigError(ValueError):
    """The display settings cannot work (unknown driver, bad address): retrying will not help."""


def settings(config: dict, panel=None) -> dict:
    """The display settings, checked: driver, bus, port, address (I²C) or
    device, dc and reset (SPI), rotate, retry_s, notice_s.  ``panel`` (a
    :class:`hardware.boards.Panel`): the board's own panel, with only
    ``retry_s`` and ``notice_s`` taken from the ``[display]`` section."""
    display = dict(config.get("display") or {})
    if panel is not None:
        display = {**panel.settings(), **{k: display[k] for k in ("retry_s", "notice_s") if k in display}}
    driver = str(display.get("driver", "ssd1306")).lower()
    if driver not in DRIVERS:
        raise DisplayConfigError(f"unknown display driver {driver!r} (use one of: {', '.join(DRIVERS)})")
    bus = str(display.get("bus", "i2c")).lower()
    if bus not in ("i2c", "spi"):
        raise DisplayConfigError(f"unknown display bus {bus!r} (use i2c, or a board whose panel is on spi)")
    address = display.get("address", 0x3C)
    try:
        address = int(address, 0) if isinstance(address, str) else int(address)
        port = int(display.get("port", 1 if bus == "i2c" else 0))
        rotate = int(display.get("rotate", 0))
        retry_s = float(display.get("retry_s", RETRY_S))
        notice_s = float(display.get("notice_s", NOTICE_AFTER_S))
        device = int(display.get("device", 0))
    except (TypeError, ValueError) as exc:
        raise DisplayConfigError(f"bad display setting: {exc}") from None
    if rotate not in (0, 2):
        # The screens are drawn for a 128x64 landscape panel: upright or upside down.
        raise DisplayConfigError(f"display rotate must be 0 or 2 (upside down), got {rotate}")
    return {"driver": driver, "bus": bus, "port": port, "address": address, "device": device,
            "dc": display.get("dc"), "reset": display.get("reset"), "rotate": rotate,
            "retry_s": max(0.05, retry_s), "notice_s": max(0.0, notice_s)}


def open_device(config: dict, mock: bool, panel=None, factory=None, spi_bus=None):
    """The luma device: the dummy in mock mode, else the panel on its bus
    (``panel``: the board's, hardware/boards.py; else the ``[display]``
    settings, on I²C).  ``factory()``: the pin factory for an SPI panel's
    DC and reset lines; ``spi_bus``: a spidev-compatible bus instead of the
    kernel's (the tests' emulated one).  Raises one of DISPLAY_ERRORS when
    there is no panel."""
    s = settings(config, panel)
    if mock:
        from luma.core.device import dummy

        return dummy(width=128, height=64, rotate=s["rotate"], mode="1")
    if s["bus"] == "spi":
        from . import spi_panel

        serial = spi_panel.serial(panel, factory() if callable(factory) else factory, bus=spi_bus)
    else:
        from luma.core.interface.serial import i2c

        _probe(s["port"], s["address"])
        serial = i2c(port=s["port"], address=s["address"])
    try:
        return make_device(s["driver"], serial, s["rotate"])
    except BaseException:
        serial.cleanup()          # do not leak the bus file descriptor at every retry
        raise


def i2c_answers(port: int, address: int) -> bool:
    """Does a panel answer at ``address`` on I²C bus ``port``?  False when
    nothing does or there is no bus; True when the box cannot tell (no
    permission, no smbus2): then it is taken as there, as before boards."""
    try:
        _probe(port, address)
    except DevicePermissionError:
        return True
    except DeviceNotFoundError:
        return False
    return True


def make_device(driver: str, serial, rotate: int = 0):
    """luma's real ``ssd1306`` or ``sh1106`` driver on ``serial``, sending only what changed."""
    return _device_classes()[driver](serial, width=128, height=64, rotate=rotate)


def page_bytes(image, width: int = 128, pages: int = 8) -> list[bytes]:
    """A mode "1" image in the controller's memory layout: for each page
    (8 rows), one byte per column, bit 0 the page's top row."""
    from PIL import Image

    return [image.crop((0, 8 * p, width, 8 * p + 8)).transpose(Image.Transpose.ROTATE_270).tobytes()
            for p in range(pages)]


def changed_runs(old: list[bytes] | None, new: list[bytes]) -> list[tuple[int, int, int]]:
    """(page, first column, last column) of each page that differs; all of it when ``old`` is unknown."""
    runs = []
    for page, row in enumerate(new):
        if old is None:
            runs.append((page, 0, len(row) - 1))
            continue
        before = old[page]
        changed = [x for x in range(len(row)) if row[x] != before[x]]
        if changed:
            runs.append((page, changed[0], changed[-1]))
    return runs


class _SendsChanges:
    """Over luma's driver: :meth:`display` sends only the bytes that changed.

    luma's ``ssd1306`` and ``sh1106`` send the whole 1024-byte frame every
    time (their ``diff_to_previous`` framebuffer is only for the greyscale
    panels): 9 ms on a 400 kHz bus, 92 ms on the Pi's default 100 kHz, for a
    cursor that moved one row.  This sends, for each changed 8-row page, the
    span of columns that changed.  While a frame is being sent, what the
    panel holds is unknown (a write may fail half-way): the next frame after
    an error is sent whole, by a new device (see :class:`Screen`)."""

    _shown: list[bytes] | None = None

    def display(self, image):
        assert image.mode == self.mode and image.size == self.size
        pages = page_bytes(self.preprocess(image), self._w, self._h // 8)
        old, self._shown = self._shown, None
        runs = changed_runs(old, pages)
        if runs:
            self._send(pages, runs)
        self._shown = pages


def _device_classes() -> dict:
    from luma.oled.device import sh1106, ssd1306

    class SSD1306(_SendsChanges, ssd1306):
        def _send(self, pages, runs):
            c = self._const
            first, last = runs[0][0], runs[-1][0]
            left, right = min(r[1] for r in runs), max(r[2] for r in runs)
            one_window = 6 + (right - left + 1) * (last - first + 1)
            per_page = sum(6 + r[2] - r[1] + 1 for r in runs)
            if one_window <= per_page:       # a full redraw, or a block of change
                self.command(c.COLUMNADDR, self._colstart + left, self._colstart + right,
                             c.PAGEADDR, first, last)
                self.data([b for page in pages[first:last + 1] for b in page[left:right + 1]])
                return
            for page, left, right in runs:
                self.command(c.COLUMNADDR, self._colstart + left, self._colstart + right, c.PAGEADDR, page, page)
                self.data(list(pages[page][left:right + 1]))

    class SH1106(_SendsChanges, sh1106):
        # The SH1106 has page addressing only: a page, a start column, then data.
        def _send(self, pages, runs):
            for page, left, right in runs:
                column = self._page_address_offset + left
                self.command(0xB0 + page, column & 0x0F, 0x10 | column >> 4)
                self.data(list(pages[page][left:right + 1]))

    return {"ssd1306": SSD1306, "sh1106": SH1106}


def _probe(port: int, address: int) -> None:
    """Is anything answering at ``address``?  A quick write, as ``i2cdetect`` does.

    Checked before building the driver, because a luma device registers an
    exit hook as soon as it is constructed: failing *after* that at every
    retry would leak a little memory each time."""
    try:
        from smbus2 import SMBus
    except ImportError:
        return
    try:
        bus = SMBus(port)
    except FileNotFoundError:
        raise DeviceNotFoundError(f"I2C bus {port} not found (/dev/i2c-{port}): enable I2C with raspi-config") from None
    except PermissionError:
        raise DevicePermissionError(f"no permission for /dev/i2c-{port}: add the user to the i2c group") from None
    try:
        bus.write_quick(address)
    except OSError:
        raise DeviceNotFoundError(f"nothing answers at I2C address 0x{address:02X} on bus {port}") from None
    finally:
        bus.close()


class Screen:
    """Where frames go: the panel if it works, always the last frame in memory."""

    def __init__(self, opener: Callable[[], object], on_restored: Callable[[object], None], retry_s: float = RETRY_S,
                 *, notify: Callable[[tuple | None, tuple | None], None] | None = None,
                 where: dict | None = None, notice_after_s: float = NOTICE_AFTER_S):
        self._opener = opener
        self._on_restored = on_restored     # called from the retry thread with a working device
        self.retry_s = retry_s
        # notify(added, removed): a notice for the table when the panel stays
        # missing, taken back when it answers again.
        self._notify = notify
        self._where = where or {"bus": "i2c", "port": 1, "address": 0x3C}
        self.notice_after_s = notice_after_s
        self._lost_at: float | None = None
        self._error = ""
        self.notice: tuple | None = None
        self.device = None
        self.contrast: int | None = None    # as panel care last asked (None: the driver's own)
        self.lit = True
        self.failures = 0                   # how many times the panel was lost or not found
        self._stop = threading.Event()
        self._retry: threading.Thread | None = None
        self._lock = threading.Lock()       # guards _retry
        try:
            self.device = opener()
        except DisplayConfigError as exc:
            log.error("display disabled: %s (the screen is still mirrored on /oled.png)", exc)
        except DISPLAY_ERRORS as exc:
            self._lost(exc, "no display at start")

    def show(self, image) -> bool:
        """Send ``image`` to the panel; False when there is no working panel."""
        device = self.device
        if device is None:
            return False
        try:
            device.display(image)
            return True
        except Exception as exc:
            # DISPLAY_ERRORS mostly; but whatever a vanishing panel makes its
            # driver raise (a TimeoutError, a struct.error...) must not escape
            # into the box's frame loop, where it would skip the frame's
            # subscribers (the web mirror) and repeat at every frame.
            self.device = None
            _release(device)
            self._lost(exc, "display stopped answering")
            return False

    def power(self, contrast: int, lit: bool) -> bool:
        """The panel's contrast (0-255) and whether it is on (panel care,
        hardware/panel_care.py): sent only when they change, and again to a
        panel found anew (a new device starts at the driver's own contrast).
        False when there is no working panel; an error here is a lost panel,
        as in :meth:`show`."""
        self.contrast, self.lit = int(contrast), bool(lit)
        device = self.device
        if device is None:
            return False
        want = (self.contrast, self.lit)
        if getattr(device, "_companion_power", None) == want:
            return True
        try:
            device.contrast(self.contrast)
            device.show() if self.lit else device.hide()
            device._companion_power = want
            return True
        except Exception as exc:          # like show(): never into the box's frame loop
            self.device = None
            _release(device)
            self._lost(exc, "display stopped answering")
            return False

    def adopt(self, device) -> None:
        """Take back a panel the retry thread found (runs on the box's worker)."""
        if self._stop.is_set():
            _cleanup(device)
            return
        self.device = device
        log.info("display is back")
        if self.contrast is not None:       # a panel found anew starts at its driver's contrast
            device._companion_power = None
            self.power(self.contrast, self.lit)
        self._lost_at = None
        notice, self.notice = self.notice, None
        if notice is not None and self._notify is not None:
            self._notify(None, notice)

    def _lost(self, exc: Exception, what: str) -> None:
        self.failures += 1
        if self._lost_at is None:
            self._lost_at = time.monotonic()
        self._error = describe(exc)
        # Logged once per loss, not at every retry.
        log.warning("%s: %s: %s; the companion goes on, retrying every %g s",
                    what, type(exc).__name__, exc, self.retry_s)
        with self._lock:
            if self._stop.is_set() or (self._retry is not None and self._retry.is_alive()):
                return
            self._retry = threading.Thread(target=self._retry_loop, name="display-retry", daemon=True)
            self._retry.start()

    def _retry_loop(self) -> None:
        while not self._stop.wait(self.retry_s):      # sleeps; wakes at once on close()
            try:
                device = self._opener()
            except DISPLAY_ERRORS as exc:
                log.debug("display still missing: %s", exc)
                self._error = describe(exc)
                self._tell()
                continue
            except Exception:
                log.exception("display retry failed unexpectedly")
                continue
            self._on_restored(device)
            return

    def _tell(self) -> None:
        """Add the notice once the panel has been missing for ``notice_after_s``."""
        if self.notice is not None or self._notify is None or self._lost_at is None:
            return
        if time.monotonic() - self._lost_at < self.notice_after_s:
            return
        if self._where.get("bus") == "spi":
            self.notice = (NO_SPI_DISPLAY, {"error": self._error, "port": self._where["port"],
                                            "device": self._where.get("device", 0)})
        else:
            self.notice = (NO_DISPLAY, {"error": self._error, "port": self._where["port"],
                                        "address": f"{self._where['address']:02x}"})
        self._notify(self.notice, None)

    @property
    def retrying(self) -> bool:
        return self._retry is not None and self._retry.is_alive()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            retry = self._retry
        if retry is not None and retry is not threading.current_thread():
            retry.join(timeout=5)
        device, self.device = self.device, None
        if device is not None:
            _cleanup(device)


def _cleanup(device) -> None:
    """Switch the panel off and free the bus (luma would also do it at exit)."""
    try:
        device.cleanup()
    except Exception as exc:  # a panel that is gone cannot be switched off
        log.debug("display cleanup failed: %s", exc)


def _release(device) -> None:
    """Free a lost panel's bus and lines without a word to the panel (it
    stopped answering): an SPI panel's DC and reset pins must be free for
    the device found anew, and no file descriptor is left at every loss."""
    try:
        device.persist = True          # luma's exit hook: nothing sent to it either
        serial = getattr(device, "_serial_interface", None)
        if serial is not None:
            serial.cleanup()
    except Exception as exc:
        log.debug("releasing the lost panel failed: %s", exc)
