"""The panel's first words, before Python's libraries are even loaded.

    python3 -I /opt/companion/current/src/hardware/splash.py starting [--data DIR] [--wait SECONDS]

(``--wait``: how long the panel's bus may take to appear; 15 s on a Pi, 0 elsewhere.)

A box at power-on is a black panel until the companion has loaded its
libraries; on a first boot the system also grows itself to the card and
raises its Wi-Fi before the table appears.  The person in front of it should
see that the box is alive, and on a first boot why it takes longer.  This
module says so with nothing but Python's
standard library, so that a unit early in the boot (``companion-splash``)
or the first boot's own steps can run it with the system's ``python3``, in a
few tens of milliseconds, long before the companion's own process starts.

The frames are drawn by the box's own drawing code (:mod:`hardware.draw`:
the same font, grid and centring as the box's "Starting…" frame), packed in
the controller's page layout and shipped beside this file as
``splash/<message>-<language>.bin`` (1024 bytes each).  ``python -m
hardware.splash --render`` draws them again; a test checks that the shipped
files are what the drawing code draws, and that an emulated controller fed
by :func:`send` shows exactly that picture.

The panel is the one the box will draw on (:func:`panels`, as
hardware/boards.py picks it, from ``companion.toml`` and
``COMPANION_BOARD``): a wired box's ``[display]``, the Adafruit Bonnet's
SSD1306, or the Waveshare HAT's SH1106 on SPI; with no board setting, the
I²C panel at its address if one answers, else the HAT's.  On I²C the bus is
the kernel's ``/dev/i2c-N`` (``I2C_SLAVE`` ioctl, then plain writes: a
control byte, 0x00 for commands or 0x40 for display data, then the bytes);
on SPI it is ``/dev/spidevB.D`` (a write is one transfer) with the panel's
DC and reset lines on the GPIO character device (:class:`DevLines`), the
same bytes, DC low for commands and high for data.  Any failure (no bus, no
panel, a bad setting) is silent: the splash is a courtesy, the companion
itself reports a missing panel.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from pathlib import Path

FRAMES = Path(__file__).resolve().parent / "splash"
#: The companion's runtime folder (systemd's RuntimeDirectory): it exists from
#: the moment companion.service starts, so once it is there the panel is the
#: companion's and the splash stays silent (it never draws over the table).
COMPANION_RUNNING = Path("/run/companion")
WIDTH, PAGES = 128, 8
#: How long, early in the boot, the bus's device node may take to appear
#: (udev loads the I²C and SPI controllers' drivers while the splash starts),
#: on a Raspberry Pi only: elsewhere (a VM, a PC) the nodes never come, and
#: the first boot's unit, ordered after the splash, would wait for nothing.
WAIT_S = 15.0
MODEL = Path("/sys/firmware/devicetree/base/model")


def N_(message: str) -> str:
    """Marks a text for the catalogues (companion/locale) without importing them."""
    return message


#: What the box can say before it runs (translated when the frames are drawn).
MESSAGES = {
    "starting": N_("Starting…"),
    "growing": N_("First start: making room on the card…"),
}
LANGUAGES = ("en", "fr")
I2C_SLAVE = 0x0703
CMD, DATA = 0x00, 0x40
#: luma.oled's own set-up of each controller, as it sends it when the
#: companion's driver opens the panel moments later (a test records luma's
#: and compares); the display is switched on only once the frame is in.
INIT = {
    "ssd1306": [0xAE, 0xD5, 0x80, 0xA8, 0x3F, 0xD3, 0x00, 0x40, 0x8D, 0x14, 0x20, 0x00, 0xA1, 0xC8,
                0xDA, 0x12, 0xD9, 0xF1, 0xDB, 0x40, 0xA4, 0xA6, 0x81, 0xCF],
    "sh1106": [0xAE, 0x20, 0x10, 0xB0, 0xC8, 0x00, 0x10, 0x40, 0xA1, 0xA6, 0xA8, 0x3F, 0xA4, 0xD3,
               0x00, 0xD5, 0xF0, 0xD9, 0x22, 0xDA, 0x12, 0xDB, 0x20, 0x8D, 0x14, 0x81, 0x7F],
}
DISPLAY_ON = 0xAF


def frame_path(message: str, language: str) -> Path:
    return FRAMES / f"{message}-{language}.bin"


def rotated(pages: bytes) -> bytes:
    """The page bytes of the same picture turned upside down (``rotate = 2``):
    the pages in reverse order, each page's columns reversed, each column's
    eight rows reversed."""
    flip = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))
    out = bytearray()
    for page in reversed(range(PAGES)):
        row = pages[page * WIDTH:(page + 1) * WIDTH]
        out += bytes(flip[b] for b in reversed(row))
    return bytes(out)


def send(bus, address: int, pages: bytes, driver: str = "ssd1306") -> None:
    """The controller set up and the 1024 bytes of ``pages`` on its glass.
    ``bus``: anything with ``write_i2c_block_data(address, control, data)``
    (:class:`DevBus`, or the tests' emulated panel)."""
    for start in range(0, len(INIT[driver]), 16):
        bus.write_i2c_block_data(address, CMD, INIT[driver][start:start + 16])
    if driver == "sh1106":
        # No horizontal addressing: each page on its own, from column 2 of
        # the controller's 132 (the glass shows columns 2-129).
        for page in range(PAGES):
            bus.write_i2c_block_data(address, CMD, [0xB0 + page, 0x02, 0x10])
            row = pages[page * WIDTH:(page + 1) * WIDTH]
            for start in range(0, WIDTH, 32):
                bus.write_i2c_block_data(address, DATA, list(row[start:start + 32]))
    else:
        bus.write_i2c_block_data(address, CMD, [0x21, 0, WIDTH - 1, 0x22, 0, PAGES - 1])
        for start in range(0, len(pages), 32):
            bus.write_i2c_block_data(address, DATA, list(pages[start:start + 32]))
    bus.write_i2c_block_data(address, CMD, [DISPLAY_ON])


class DevBus:
    """The kernel's I2C character device, written the way smbus2's block
    writes reach the wire (a control byte, then the data), with no library."""

    def __init__(self, port: int):
        self.fd = os.open(f"/dev/i2c-{port}", os.O_RDWR)
        self.address: int | None = None

    def write_i2c_block_data(self, address: int, control: int, data) -> None:
        import fcntl

        if address != self.address:
            fcntl.ioctl(self.fd, I2C_SLAVE, address)
            self.address = address
        os.write(self.fd, bytes([control, *data]))

    def close(self) -> None:
        os.close(self.fd)


#: What the splash needs of hardware/boards.py and companion/config.py (it
#: may import neither): the defaults of ``[display]`` and ``[buttons]``, and
#: each plug-on board's panel.  tests/box/test_splash.py checks them against
#: those modules.
DEFAULT_DISPLAY = {"driver": "ssd1306", "port": 1, "address": 0x3C}
DEFAULT_BUTTONS = {"up": 17, "down": 27, "ok": 22, "back": 23}
BOARD_PANELS = {
    "adafruit-oled-bonnet": {"driver": "ssd1306", "bus": "i2c", "port": 1, "address": 0x3C, "rotate": 0},
    "waveshare-oled-hat": {"driver": "sh1106", "bus": "spi", "port": 0, "device": 0, "dc": 24, "reset": 25,
                           "rotate": 2},
}
AUTO_SPI = "waveshare-oled-hat"     # drawn on when no I²C panel answers (wiring.md, "Which board")


def read_settings(data_dir: Path | None) -> dict:
    """``companion.toml`` as written (no defaults); {} when there is none or it does not read."""
    if data_dir is None:
        return {}
    try:
        import tomllib

        with open(data_dir / "companion.toml", "rb") as file:
            return dict(tomllib.load(file))
    except (OSError, ValueError):
        return {}


def panels(data_dir: Path | None, environ=os.environ) -> list[dict]:
    """The panels to draw on, in turn until one takes the frame: as
    hardware/boards.py's ``resolve`` and ``auto_candidates`` choose the
    box's board.  Each is a :class:`~hardware.boards.Panel`'s settings
    (``driver``, ``bus``, ``port``, ``rotate``; ``address`` on I²C;
    ``device``, ``dc``, ``reset`` on SPI).  [] for an unknown board."""
    settings = read_settings(data_dir)
    board = environ.get("COMPANION_BOARD") or settings.get("board")
    board = "auto" if board is None or str(board).strip() == "" else str(board).strip().lower()
    display = {**DEFAULT_DISPLAY, **dict(settings.get("display") or {})}
    wired = wired_panel(display)
    if board == "wired" or (board == "auto" and own_pins(settings, display)):
        return [wired]
    if board in BOARD_PANELS:
        panel = dict(BOARD_PANELS[board])
        if display.get("rotate") is not None:
            panel["rotate"] = int(display["rotate"])        # a panel mounted the other way
        return [panel]
    if board == "auto":
        return [wired, dict(BOARD_PANELS[AUTO_SPI])]
    return []


def own_pins(settings: dict, display: dict) -> bool:
    """Do the settings name pins of their own?  Then a person wired the box
    (hardware/boards.py, ``own_pins``)."""
    buttons = {str(k).lower(): v for k, v in {**DEFAULT_BUTTONS, **dict(settings.get("buttons") or {})}.items()}
    moved = any(k in display and display[k] != v for k, v in DEFAULT_DISPLAY.items())
    return bool(settings.get("leds")) or settings.get("buzzer") is not None or buttons != DEFAULT_BUTTONS or moved


def wired_panel(display: dict) -> dict:
    """A wired box's I²C panel, from its ``[display]`` (hardware/boards.py, ``wired``)."""
    address = display.get("address", 0x3C)
    try:
        address = int(address, 0) if isinstance(address, str) else int(address)
        port = int(display.get("port", 1))
        rotate = int(display.get("rotate", 0))
    except (TypeError, ValueError):
        address, port, rotate = 0x3C, 1, 0
    return {"driver": str(display.get("driver", "ssd1306")).lower(), "bus": "i2c", "port": port,
            "address": address, "rotate": rotate}


def language(data_dir: Path | None) -> str:
    """The box's language as the companion picks it: ``COMPANION_LANG``,
    else the settings' ``language``, else English."""
    wanted = os.environ.get("COMPANION_LANG", "") or str(read_settings(data_dir).get("language") or "")
    wanted = wanted[:2].lower()
    return wanted if wanted in LANGUAGES else "en"


def show(message: str, data_dir: Path | None = None, bus=None, spi=None, lines=None,
         wait_s: float = 0.0) -> bool:
    """Put ``message`` on the box's panel; False (and nothing said) where it cannot.

    ``bus``, ``spi`` and ``lines`` stand in for the kernel's devices (the
    tests' emulated panels): an I²C bus, a spidev-like bus (``writebytes``)
    and the DC/reset lines (``set(pin, value)``).  ``wait_s``: how long the
    kernel's device nodes may take to appear (the boot's drivers load while
    the splash starts)."""
    try:
        pages = frame_path(message, language(data_dir)).read_bytes()
        if len(pages) != WIDTH * PAGES:
            return False
        deadline = time.monotonic() + wait_s
        for panel in panels(data_dir):
            if panel["driver"] not in INIT:
                continue
            frame = rotated(pages) if panel["rotate"] == 2 else pages
            try:
                if panel["bus"] == "spi":
                    drawn = show_spi(panel, frame, spi, lines, deadline)
                else:
                    drawn = show_i2c(panel, frame, bus, deadline)
            except OSError:
                drawn = False           # nothing answers there: the next candidate
            if drawn:
                return True
        return False
    except (OSError, ValueError, KeyError, TypeError):
        return False


def show_i2c(panel: dict, pages: bytes, bus, deadline: float) -> bool:
    own = bus is None
    if own and not device_there(f"/dev/i2c-{panel['port']}", deadline):
        return False
    bus = DevBus(panel["port"]) if own else bus
    try:
        send(bus, panel["address"], pages, panel["driver"])
    finally:
        if own:
            bus.close()
    return True


def show_spi(panel: dict, pages: bytes, spi, lines, deadline: float) -> bool:
    own_spi, own_lines = spi is None, lines is None
    if own_spi and not device_there(f"/dev/spidev{panel['port']}.{panel['device']}", deadline):
        return False
    spi = DevSPI(panel["port"], panel["device"]) if own_spi else spi
    try:
        # Reset held high from the start; pulled up too, so that the line
        # keeps the panel out of reset once the splash lets it go (the
        # kernel then makes it an input, and GPIO 25's own pull is down).
        lines = DevLines({panel["dc"]: 0, panel["reset"]: 1}, pull_up=(panel["reset"],)) if own_lines else lines
        try:
            lines.set(panel["reset"], 0)                # the controller set to its first state
            time.sleep(0.001)
            lines.set(panel["reset"], 1)
            time.sleep(0.001)
            send(SPIBus(spi, lines, panel["dc"]), 0, pages, panel["driver"])
        finally:
            if own_lines:
                lines.close()
    finally:
        if own_spi:
            spi.close()
    return True


def device_there(path: str, deadline: float) -> bool:
    """The device node, waited for until ``deadline``; never once the companion runs."""
    while True:
        if COMPANION_RUNNING.exists():
            return False
        if os.path.exists(path):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


# -- the panel on SPI: spidev and the GPIO character device, the standard library only --

SPI_IOC_WR_MODE = 0x40016B01            # _IOW('k', 1, __u8)
SPI_IOC_WR_MAX_SPEED_HZ = 0x40046B04    # _IOW('k', 4, __u32)
SPI_SPEED_HZ = 4_000_000                # the SH1106's limit (hardware/spi_panel.py)


class SPIBus:
    """The controller's commands and data on SPI, through :func:`send`'s
    I²C-shaped calls: the control byte becomes the DC line (low: commands,
    high: display data), the bytes one transfer."""

    def __init__(self, spi, lines, dc: int):
        self.spi, self.lines, self.dc = spi, lines, dc

    def write_i2c_block_data(self, address: int, control: int, data) -> None:
        self.lines.set(self.dc, 1 if control == DATA else 0)
        self.spi.writebytes(list(data))


class DevSPI:
    """The kernel's ``/dev/spidevB.D`` in mode 0 at :data:`SPI_SPEED_HZ`."""

    def __init__(self, port: int, device: int):
        import fcntl

        self.fd = os.open(f"/dev/spidev{int(port)}.{int(device)}", os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.ioctl(self.fd, SPI_IOC_WR_MODE, bytes([0]))
            fcntl.ioctl(self.fd, SPI_IOC_WR_MAX_SPEED_HZ, SPI_SPEED_HZ.to_bytes(4, sys.byteorder))
        except OSError:
            os.close(self.fd)
            raise

    def writebytes(self, data) -> None:
        payload = bytes(data)
        if os.write(self.fd, payload) != len(payload):
            raise OSError(5, "short SPI write")

    def close(self) -> None:
        os.close(self.fd)


# The kernel's GPIO character device, version 2 (linux/gpio.h); sizes as the
# kernel's own static_asserts say, checked against the header in the tests.
GPIO_V2_LINES_MAX = 64
GPIO_V2_LINE_NUM_ATTRS_MAX = 10
GPIO_V2_LINE_FLAG_OUTPUT = 1 << 3
GPIO_V2_LINE_FLAG_BIAS_PULL_UP = 1 << 8
GPIO_V2_LINE_ATTR_ID_FLAGS = 1
GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES = 2
CHIP_INFO = struct.Struct("=32s32sI")                             # struct gpiochip_info
LINE_REQUEST = struct.Struct("=64I32s" + "QI5I" + "IIQQ" * GPIO_V2_LINE_NUM_ATTRS_MAX + "II5Ii")
LINE_VALUES = struct.Struct("=QQ")                                # struct gpio_v2_line_values


def _iowr(number: int, size: int, read: bool = True, write: bool = True) -> int:
    return ((read << 31) | (write << 30)) | (size << 16) | (0xB4 << 8) | number


GPIO_GET_CHIPINFO_IOCTL = _iowr(0x01, CHIP_INFO.size, write=False)   # _IOR(0xB4, 0x01, ...)
GPIO_V2_GET_LINE_IOCTL = _iowr(0x07, LINE_REQUEST.size)
GPIO_V2_LINE_SET_VALUES_IOCTL = _iowr(0x0F, LINE_VALUES.size)
#: The chip of the header's pins, by its label (mainline's and Raspberry Pi OS's kernels).
HEADER_CHIPS = ("pinctrl-bcm2835", "pinctrl-bcm2711")


def line_request(pins: dict, pull_up=()) -> bytes:
    """A ``struct gpio_v2_line_request`` for ``pins`` (BCM number -> first
    level) as outputs, those in ``pull_up`` with the pin's pull-up on."""
    offsets = list(pins)
    values = sum(1 << i for i, pin in enumerate(offsets) if pins[pin])
    every = (1 << len(offsets)) - 1
    pulled = sum(1 << i for i, pin in enumerate(offsets) if pin in pull_up)
    attrs = [(GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES, 0, values, every)]
    if pulled:
        attrs.append((GPIO_V2_LINE_ATTR_ID_FLAGS, 0, GPIO_V2_LINE_FLAG_OUTPUT | GPIO_V2_LINE_FLAG_BIAS_PULL_UP,
                      pulled))
    attrs += [(0, 0, 0, 0)] * (GPIO_V2_LINE_NUM_ATTRS_MAX - len(attrs))
    return LINE_REQUEST.pack(
        *offsets, *[0] * (GPIO_V2_LINES_MAX - len(offsets)), b"companion-splash",
        GPIO_V2_LINE_FLAG_OUTPUT, len([a for a in attrs if a[0]]), *[0] * 5,
        *[field for attr in attrs for field in attr],
        len(offsets), 0, *[0] * 5, 0)


class DevLines:
    """Output lines of the header's GPIO chip (``/dev/gpiochipN``), held
    until :meth:`close` (then the kernel gives them back as inputs)."""

    def __init__(self, pins: dict, pull_up=(), chip: str | None = None):
        import fcntl

        self.offsets = list(pins)
        fd = os.open(chip or header_chip(), os.O_RDWR | os.O_CLOEXEC)
        try:
            request = bytearray(line_request(pins, pull_up))
            fcntl.ioctl(fd, GPIO_V2_GET_LINE_IOCTL, request)
        finally:
            os.close(fd)
        self.fd = LINE_REQUEST.unpack(request)[-1]

    def set(self, pin: int, value) -> None:
        import fcntl

        bit = 1 << self.offsets.index(pin)
        fcntl.ioctl(self.fd, GPIO_V2_LINE_SET_VALUES_IOCTL, LINE_VALUES.pack(bit if value else 0, bit))

    def close(self) -> None:
        os.close(self.fd)


def header_chip() -> str:
    """The GPIO chip of the 40-pin header: the one labelled as the Pi's
    pin controller, else ``/dev/gpiochip0`` (gpiozero's own default)."""
    import fcntl
    import glob

    for path in sorted(glob.glob("/dev/gpiochip*")):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            info = bytearray(CHIP_INFO.size)
            fcntl.ioctl(fd, GPIO_GET_CHIPINFO_IOCTL, info)
            if CHIP_INFO.unpack(info)[1].split(b"\0")[0].decode() in HEADER_CHIPS:
                return path
        except OSError:
            pass
        finally:
            os.close(fd)
    return "/dev/gpiochip0"


# -- drawing the frames (needs Pillow and the box's fonts: at build time, not at boot) --

def draw(message: str, lang: str):
    """The frame of ``message`` in ``lang`` on the box's recording canvas,
    drawn like the box's "Starting…" (the same font and centring); the other
    messages under a "Starting…" title, wrapped on the text rows."""
    from companion.i18n import gettext
    from hardware.draw import BODY, HEIGHT, MARGIN, PITCH, ROW_Y, TITLE, WIDTH, Canvas, wrap

    text = gettext(MESSAGES[message], lang)
    canvas = Canvas()
    if message == "starting":
        canvas.center(HEIGHT // 2 - 8, text, font=TITLE)     # the box's own "Starting…" frame
    else:
        canvas.center(MARGIN, gettext(MESSAGES["starting"], lang), font=TITLE)
        for i, line in enumerate(wrap(text, BODY, WIDTH - 2 * MARGIN - 2)):
            canvas.center(ROW_Y + 4 + i * PITCH, line, font=BODY)
    return canvas


def render(message: str, lang: str) -> bytes:
    """:func:`draw`'s frame as the controller's 1024 page bytes."""
    from hardware.display import page_bytes

    return b"".join(page_bytes(draw(message, lang).image))


def on_a_pi() -> bool:
    try:
        return MODEL.read_bytes().startswith(b"Raspberry Pi")
    except OSError:
        return False


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--render"]:
        FRAMES.mkdir(exist_ok=True)
        for message in MESSAGES:
            for lang in LANGUAGES:
                frame_path(message, lang).write_bytes(render(message, lang))
        return 0
    data_dir, wait_s = None, WAIT_S if on_a_pi() else 0.0
    if "--data" in args:
        at = args.index("--data")
        data_dir = Path(args[at + 1]) if at + 1 < len(args) else None
        del args[at:at + 2]
    if "--wait" in args:
        at = args.index("--wait")
        try:
            wait_s = float(args[at + 1])
        except (IndexError, ValueError):
            pass
        del args[at:at + 2]
    data_dir = data_dir or Path(os.environ.get("STATE_DIRECTORY") or "/var/lib/companion")
    show(args[0] if args else "starting", data_dir, wait_s=wait_s)
    return 0        # never fail a boot over a courtesy


if __name__ == "__main__":
    sys.exit(main())
