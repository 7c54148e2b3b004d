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

import logging
import threading
from typing import Callable

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


class DisplayConfigError(ValueError):
    """The display settings cannot work (unknown driver, bad address): retrying will not help."""


def settings(config: dict) -> dict:
    """The display section of the config, checked: driver, port, address, rotate, retry_s."""
    display = dict(config.get("display") or {})
    driver = str(display.get("driver", "ssd1306")).lower()
    if driver not in DRIVERS:
        raise DisplayConfigError(f"unknown display driver {driver!r} (use one of: {', '.join(DRIVERS)})")
    address = display.get("address", 0x3C)
    try:
        address = int(address, 0) if isinstance(address, str) else int(address)
        port = int(display.get("port", 1))
        rotate = int(display.get("rotate", 0))
        retry_s = float(display.get("retry_s", RETRY_S))
    except (TypeError, ValueError) as exc:
        raise DisplayConfigError(f"bad display setting: {exc}") from None
    if rotate not in (0, 2):
        # The screens are drawn for a 128x64 landscape panel: upright or upside down.
        raise DisplayConfigError(f"display rotate must be 0 or 2 (upside down), got {rotate}")
    return {"driver": driver, "port": port, "address": address, "rotate": rotate, "retry_s": max(0.05, retry_s)}


def open_device(config: dict, mock: bool):
    """The luma device: the dummy in mock mode, else the configured I2C panel.
    Raises one of DISPLAY_ERRORS when there is no panel."""
    s = settings(config)
    if mock:
        from luma.core.device import dummy

        return dummy(width=128, height=64, rotate=s["rotate"], mode="1")
    from luma.core.interface.serial import i2c

    from . import pages as oled     # luma.oled's drivers, sending only the changed pages

    _probe(s["port"], s["address"])
    serial = i2c(port=s["port"], address=s["address"])
    try:
        return getattr(oled, s["driver"])(serial, width=128, height=64, rotate=s["rotate"])
    except BaseException:
        serial.cleanup()          # do not leak the bus file descriptor at every retry
        raise


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

    def __init__(self, opener: Callable[[], object], on_restored: Callable[[object], None], retry_s: float = RETRY_S):
        self._opener = opener
        self._on_restored = on_restored     # called from the retry thread with a working device
        self.retry_s = retry_s
        self.device = None
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
            self._lost(exc, "display stopped answering")
            return False

    def adopt(self, device) -> None:
        """Take back a panel the retry thread found (runs on the box's worker)."""
        if self._stop.is_set():
            _cleanup(device)
            return
        self.device = device
        log.info("display is back")

    def _lost(self, exc: Exception, what: str) -> None:
        self.failures += 1
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
                continue
            except Exception:
                log.exception("display retry failed unexpectedly")
                continue
            self._on_restored(device)
            return

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
