"""What the box's screens share, so that none of them needs another screen.

A screen over the game (a menu, the turn clock, the hub, set-up, the game
page's QR code...) is built from the same few pieces:

* :class:`Layer`, what every screen over the game is, and :class:`ListLayer`,
  a title and rows to move through and pick from;
* :func:`qr_image`, a QR code the panel can show and a phone can scan;
* :func:`chunks`, text with no words to wrap at (a password, an address)
  cut into lines;
* :func:`own_wifi`, the box's own Wi-Fi network while it runs one;
* :func:`save_box_setting`, a choice kept in ``<data>/companion.toml`` for
  the next start.

The main menu (hardware/ui/menus.py) opens the screens, so it imports them;
a screen that took these pieces from the menu would import it back and the
two would each need the other half-loaded.  A piece belongs here when two
screens or more draw or decide with it; what one screen alone needs stays
in that screen's module.  Nothing here imports a screen.
"""

from __future__ import annotations

from pathlib import Path

from appliance.settings_file import save_setting

from .. import draw as d
from ..draw import Canvas

ROW_H = d.LINE
ROWS = 3            # text rows on the grid's pitch under the header (d.ROW_Y + i * d.PITCH)


class Layer:
    """A screen over the game: gets every button, draws the whole frame.
    ``private`` layers show the PIN: the web mirror draws them on a canvas
    marked ``mirror``, where they leave the PIN out."""

    private = False

    def __init__(self, app):
        self.app = app

    def key(self, name: str) -> None:
        if name == "back":
            self.app.pop()

    def draw(self, c: Canvas) -> None:
        raise NotImplementedError


class ListLayer(Layer):
    """A title and rows: UP/DOWN move (wrapping), OK picks, BACK leaves."""

    title = ""

    def __init__(self, app, cursor: int = 0):
        super().__init__(app)
        self.cursor = cursor

    def rows(self) -> list[tuple[str, str]]:
        """(label, right-hand text) of each row."""
        raise NotImplementedError

    def pick(self, index: int) -> None:
        raise NotImplementedError

    def key(self, name: str) -> None:
        n = len(self.rows())
        if name in ("up", "down") and n:
            self.cursor = (self.cursor + (-1 if name == "up" else 1)) % n
        elif name == "ok" and n:
            self.pick(min(self.cursor, n - 1))
        elif name == "back":
            self.app.pop()

    def draw(self, c: Canvas) -> None:
        rows = self.rows()
        self.cursor = min(self.cursor, max(0, len(rows) - 1))
        c.header(self.title, f"{self.cursor + 1}/{len(rows)}" if len(rows) > ROWS else "")
        first = max(0, min(self.cursor - ROWS + 2, len(rows) - ROWS)) if self.cursor >= ROWS - 1 else 0
        for i, (label, right) in enumerate(rows[first:first + ROWS]):
            c.row(d.ROW_Y + i * d.PITCH, label, first + i == self.cursor, height=ROW_H, right=right)


def chunks(text: str, font, width: int, lines: int) -> list[str]:
    """``text`` cut anywhere (a password has no words) into at most
    ``lines`` lines of ``width`` pixels, the last shortened if it must be."""
    out: list[str] = []
    while text and len(out) < lines - 1:
        n = len(text)
        while n > 1 and d.text_width(text[:n], font) > width:
            n -= 1
        out.append(text[:n])
        text = text[n:]
    if text:
        out.append(d.fit(text, font, width))
    return out


def own_wifi(app):
    """The box's own Wi-Fi (a :class:`appliance.wifi.Status`) or None: read
    from the data folder's ``wifi.json`` (one ``stat`` when unchanged)."""
    from appliance.wifi import own_status

    try:
        return own_status(app.config.get("data_dir"))
    except Exception:            # a status that cannot be read: no Wi-Fi code, the screens show the address
        return None


def qr_image(url: str, scale: int = 2, error: str = "m"):
    """The QR code of ``url`` as a mode "1" image with lit quiet zone and dark
    modules (scanners want dark on light), or None if it cannot fit 64 px at
    2 px per module (1 px per module does not scan).  Error level L for the
    Wi-Fi code: its ~46 characters fit version 3 (29 modules) only at L."""
    import segno        # here, not at the top: 25 ms of imports the box's first frame need not wait for

    code = segno.make_qr(url, error=error)
    size = code.symbol_size(scale=1, border=0)[0]
    for border in (2, 1):
        if (size + 2 * border) * scale <= d.HEIGHT:
            break
    else:
        return None
    from PIL import Image

    side = (size + 2 * border) * scale
    image = Image.new("1", (side, side), d.ON)
    pixels = image.load()
    for r, row in enumerate(code.matrix):
        for col, dark in enumerate(row):
            if dark:
                for dy in range(scale):
                    for dx in range(scale):
                        pixels[(col + border) * scale + dx, (r + border) * scale + dy] = d.OFF
    return image


def save_box_setting(app, key: str, value) -> None:
    """Keep ``key = value`` in the settings file of the box's data folder
    (``<data>/companion.toml``, see :func:`save_setting`) for the next start;
    without a store (a bare test app) nothing is written."""
    folder = getattr(getattr(app.session, "store", None), "dir", None)
    if folder is not None:
        save_setting(Path(folder) / "companion.toml", key, value)
