"""A panel on 4-wire SPI, for luma's ``spi`` interface, with no library of its own.

luma.core's ``spi`` interface takes two objects: a bus compatible with
py-spidev (``open``, ``max_speed_hz``, ``mode``, ``writebytes``,
``close``) and a GPIO module compatible with RPi.GPIO (``setup``,
``output``, ``OUT``, ``HIGH``, ``LOW``) for the panel's DC and reset lines.
Neither is taken from those libraries here:

* :class:`KernelSPI` is the kernel's ``/dev/spidevB.D`` itself: a
  ``write()`` on it is one SPI transfer (the spidev driver's simple
  half-duplex path, up to its 4096-byte buffer), and the clock and mode are
  two ``ioctl`` calls.  py-spidev is a C extension with no wheel for the
  box (a compiler on every box, or in the image build); this is 40 lines of
  the standard library, and the tests pass the emulated bus instead
  (hardware/i2c_panel.py, :class:`~hardware.i2c_panel.EmulatedSPI`);
* :class:`GpioLines` drives DC and reset through gpiozero's
  ``DigitalOutputDevice``: the same pin factory as the buttons (lgpio on a
  Pi, RPi.GPIO never: it cannot run on Debian's kernel; gpiozero's
  ``MockFactory`` in the tests), so the pins are reserved like any other
  and a clash with a button is gpiozero's clear ``GPIOPinInUse``.

What the box sends on it is what it sends on I²C: luma's own ``ssd1306``
or ``sh1106`` driver, only the changed columns (hardware/display.py), the
same retry when a write fails.  An SPI panel cannot say it is missing (no
acknowledge): a write to nobody succeeds.
"""

from __future__ import annotations

import os

#: The SH1106's serial clock is specified up to 4 MHz (250 ns cycle); the
#: SSD1306's up to 10.  A whole frame is 1 KiB: 2 ms at 4 MHz.
BUS_SPEED_HZ = 4_000_000
SPI_IOC_WR_MODE = 0x40016B01          # _IOW('k', 1, __u8)
SPI_IOC_WR_MAX_SPEED_HZ = 0x40046B04  # _IOW('k', 4, __u32)
BUFSIZ = 4096                         # the spidev driver's default buffer


class KernelSPI:
    """``/dev/spidev<port>.<device>`` with py-spidev's interface (the part luma uses)."""

    def __init__(self):
        self.fd: int | None = None
        self._speed = 0
        self._mode = 0

    def open(self, port: int, device: int) -> None:
        # FileNotFoundError (ENOENT) when SPI is off: luma makes it DeviceNotFoundError.
        self.fd = os.open(f"/dev/spidev{int(port)}.{int(device)}", os.O_RDWR | os.O_CLOEXEC)

    def _ioctl(self, request: int, value: int, size: int) -> None:
        import fcntl

        fcntl.ioctl(self.fd, request, int(value).to_bytes(size, "little"))

    @property
    def max_speed_hz(self) -> int:
        return self._speed

    @max_speed_hz.setter
    def max_speed_hz(self, hz: int) -> None:
        self._ioctl(SPI_IOC_WR_MAX_SPEED_HZ, hz, 4)
        self._speed = int(hz)

    @property
    def mode(self) -> int:
        return self._mode

    @mode.setter
    def mode(self, mode: int) -> None:
        self._ioctl(SPI_IOC_WR_MODE, mode, 1)
        self._mode = int(mode)

    def writebytes(self, data) -> None:
        payload = bytes(data)
        for start in range(0, len(payload), BUFSIZ):
            chunk = payload[start:start + BUFSIZ]
            if os.write(self.fd, chunk) != len(chunk):
                raise OSError(5, "short SPI write")

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


class GpioLines:
    """The part of RPi.GPIO's interface luma's serial interfaces use, on gpiozero's outputs."""

    OUT, IN = 0, 1
    LOW, HIGH = 0, 1
    BCM = 11

    def __init__(self, factory=None):
        self.factory = factory
        self.lines: dict = {}

    def setmode(self, mode) -> None:
        pass

    def setwarnings(self, value) -> None:
        pass

    def setup(self, pin, mode, **kwargs) -> None:
        from gpiozero import DigitalOutputDevice

        if pin in self.lines:
            return
        # High from the start: a reset line held low is a panel held in reset.
        self.lines[pin] = DigitalOutputDevice(pin, initial_value=True, pin_factory=self.factory)

    def output(self, pin, value) -> None:
        self.lines[pin].value = bool(value)

    def cleanup(self, pins=None) -> None:
        for pin in list(self.lines if pins is None else pins):
            device = self.lines.pop(pin, None)
            if device is not None:
                device.close()


def serial(panel, factory=None, bus=None):
    """luma's ``spi`` interface for ``panel`` (a :class:`hardware.boards.Panel`):
    on ``bus`` (a spidev-compatible object; default the kernel's), DC and
    reset through gpiozero on ``factory``.  Raises luma's
    ``DeviceNotFoundError`` when the bus is not there (SPI off), gpiozero's
    errors when a line cannot be had; frees what it took before raising."""
    from luma.core.interface.serial import spi

    class PanelSPI(spi):
        def cleanup(self):
            try:
                super().cleanup()
            finally:
                lines.cleanup()

    lines = GpioLines(factory)
    try:
        return PanelSPI(spi=bus if bus is not None else KernelSPI(), gpio=lines, port=panel.port,
                        device=panel.device, bus_speed_hz=BUS_SPEED_HZ, transfer_size=BUFSIZ,
                        gpio_DC=panel.dc, gpio_RST=panel.reset)
    except BaseException:
        lines.cleanup()
        raise
