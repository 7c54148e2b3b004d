"""The panel's first words, before Python's libraries are even loaded.

    python3 -I /opt/companion/current/src/hardware/splash.py starting [--data DIR]

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

The bus is the kernel's ``/dev/i2c-N`` (``I2C_SLAVE`` ioctl, then plain
writes: a control byte, 0x00 for commands or 0x40 for display data, then
the bytes), with the panel's settings read from ``companion.toml`` as the
box reads them (``[display]`` driver, port, address, rotate).  Any failure
(no bus, no panel, a bad setting) is silent: the splash is a courtesy, the
companion itself reports a missing panel.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

FRAMES = Path(__file__).resolve().parent / "splash"
#: The companion's runtime folder (systemd's RuntimeDirectory): it exists from
#: the moment companion.service starts, so once it is there the panel is the
#: companion's and the splash stays silent (it never draws over the table).
COMPANION_RUNNING = Path("/run/companion")
WIDTH, PAGES = 128, 8


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


def panel_settings(data_dir: Path | None) -> dict:
    """The ``[display]`` settings of ``companion.toml`` (defaults as the box's)."""
    display: dict = {}
    if data_dir is not None:
        try:
            import tomllib

            with open(data_dir / "companion.toml", "rb") as file:
                display = dict(tomllib.load(file).get("display") or {})
        except (OSError, ValueError):
            display = {}
    address = display.get("address", 0x3C)
    return {"driver": str(display.get("driver", "ssd1306")).lower(),
            "port": int(display.get("port", 1)),
            "address": int(address, 0) if isinstance(address, str) else int(address),
            "rotate": int(display.get("rotate", 0))}


def language(data_dir: Path | None) -> str:
    """The box's language as the companion picks it: ``COMPANION_LANG``,
    else the settings' ``language``, else English."""
    wanted = os.environ.get("COMPANION_LANG", "")
    if not wanted and data_dir is not None:
        try:
            import tomllib

            with open(data_dir / "companion.toml", "rb") as file:
                wanted = str(tomllib.load(file).get("language") or "")
        except (OSError, ValueError):
            wanted = ""
    wanted = wanted[:2].lower()
    return wanted if wanted in LANGUAGES else "en"


def show(message: str, data_dir: Path | None = None, bus=None) -> bool:
    """Put ``message`` on the panel; False (and nothing said) where it cannot."""
    try:
        settings = panel_settings(data_dir)
        pages = frame_path(message, language(data_dir)).read_bytes()
        if len(pages) != WIDTH * PAGES or settings["driver"] not in INIT:
            return False
        if settings["rotate"] == 2:
            pages = rotated(pages)
        own = bus is None
        if own and COMPANION_RUNNING.exists():
            return False
        bus = DevBus(settings["port"]) if own else bus
        try:
            send(bus, settings["address"], pages, settings["driver"])
        finally:
            if own:
                bus.close()
        return True
    except (OSError, ValueError, KeyError):
        return False


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


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--render"]:
        FRAMES.mkdir(exist_ok=True)
        for message in MESSAGES:
            for lang in LANGUAGES:
                frame_path(message, lang).write_bytes(render(message, lang))
        return 0
    data_dir = None
    if "--data" in args:
        at = args.index("--data")
        data_dir = Path(args[at + 1]) if at + 1 < len(args) else None
        del args[at:at + 2]
    data_dir = data_dir or Path(os.environ.get("STATE_DIRECTORY") or "/var/lib/companion")
    show(args[0] if args else "starting", data_dir)
    return 0        # never fail a boot over a courtesy


if __name__ == "__main__":
    sys.exit(main())
