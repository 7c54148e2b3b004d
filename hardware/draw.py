"""Drawing on the 128x64 one-bit OLED: fonts, a recording canvas, small widgets.

Every frame is drawn on a fresh :class:`Canvas` (a mode "1" PIL image).  The
canvas also *records every item it draws*, in order: each string (in
``texts``, what the tests read to check what a frame says without OCR) and,
in ``items``, each text with its font, fill and ink, each filled bar, line
and icon with its box.  :mod:`hardware.layout` reads those items to check a
frame's layout (no letter cut by the panel's edge, a highlight or another
item).

**The type.**  Terminus Font (SIL OFL 1.1, shipped in ``hardware/fonts``
with its licence): a bitmap face drawn *for* the pixel grid, so each glyph
is the same pixels on every machine, at every size the font carries (12, 14,
16, 24 px here), with Latin-1 and Latin Extended-A (É Ł Ø ß ñ ï).  At 12 px
a line is exactly 12 rows: a capital's accent on rows 0-1, capitals on 2-9,
the baseline under row 9, descenders (g, Ç) on rows 10-11.  The box lays
letters out itself (see :func:`_layout`), proportionally: a glyph advances by
its ink plus one clear column (digits keep their cell, so scores line up),
which gives ``i``, ``l``, ``:`` and spaces back their unused columns: a
hint line holds four or five more letters than Terminus's fixed cells.

**The grid.**  A clear pixel at every edge of the panel (``MARGIN``); text
rows on a fixed pitch (``PITCH`` = a 12-row line + one clear row); a
highlight bar takes the clear row above and below its line, so it holds its
letters whole with a lit row on each side and never touches the next line's
ink; the hint line sits on the last rows, its descenders on the last row
but one.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 128, 64
ON, OFF = 255, 0          # pixel values of a mode "1" image (not 1/0)
FONT_DIR = Path(__file__).with_name("fonts")
REGULAR = FONT_DIR / "terminus-normal.otb"
BOLD = FONT_DIR / "terminus-bold.otb"
ELLIPSIS = "…"

# Pillow's basic layout engine, chosen explicitly (the box places each glyph
# itself anyway, see _layout): nothing depends on whether the system has raqm.
LAYOUT = ImageFont.Layout.BASIC


def _font(path: Path, size: int, layout=LAYOUT) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(path), size, layout_engine=layout)


# The sizes the screens use: pixel sizes Terminus carries (12, 14, 16, 24).
SMALL = _font(REGULAR, 12)     # footers, hints, headers: 6 px cells, 12 rows
BODY = _font(REGULAR, 12)      # rows of names and scores
STRONG = _font(BOLD, 12)       # the highlighted row, scores
TITLE = _font(BOLD, 14)        # screen titles: 7 px cells, 14 rows
BIG = _font(BOLD, 16)          # card digits, the name to pass the box to (TITLE's glyphs, 16 rows)
HUGE = _font(BOLD, 24)         # a single big number or name: 12 px cells, 24 rows

ALL_FONTS = {"SMALL": SMALL, "BODY": BODY, "STRONG": STRONG, "TITLE": TITLE, "BIG": BIG, "HUGE": HUGE}

# -- the grid -------------------------------------------------------------------
MARGIN = 1                 # the clear pixel at each edge of the panel: no ink there
LINE = 12                  # rows of a line of SMALL/BODY/STRONG: accents, capitals, descenders
BASELINE = 10              # the baseline's row inside that line (ascender 10, descender 2)
PITCH = LINE + 1           # text rows: a line and one clear row (where a highlight bar lies)
HEADER_Y = MARGIN          # the header line's top
RULE_Y = HEADER_Y + LINE   # the rule under the header (row 13)
ROW_Y = RULE_Y + 1         # the first text row under the rule (row 14): rows at 14, 27, 40
HINT_Y = HEIGHT - MARGIN - LINE   # the hint line's top (row 51): descenders on row 62
ROWS_ABOVE_HINT = 3        # text rows between the rule and the hint line
LEFT, RIGHT = MARGIN + 1, WIDTH - MARGIN - 1   # where row text starts / ends (a bar's inner edges)


@lru_cache(maxsize=4096)
def text_width(text: str, font: ImageFont.FreeTypeFont) -> int:
    """How many pixels ``text`` advances (its last letter's clear column included)."""
    return _layout(text, font)[1]


@lru_cache(maxsize=64)
def _cell(font: ImageFont.FreeTypeFont) -> int:
    return int(round(font.getlength("0")))


@lru_cache(maxsize=8192)
def _ink_columns(ch: str, font: ImageFont.FreeTypeFont) -> tuple[int, int] | None:
    """The first and last+1 columns of ``ch``'s ink in its cell; None if blank."""
    size = font.size * 2
    image = Image.new("1", (size, size), OFF)
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"
    draw.text((0, 0), ch, font=font, fill=ON)
    box = image.getbbox()
    return None if box is None else (box[0], box[2])


@lru_cache(maxsize=8192)
def _metrics(ch: str, font: ImageFont.FreeTypeFont) -> tuple[int, int]:
    """(shift, advance) of ``ch``: where its cell is drawn relative to the pen,
    and how far the pen moves.  Digits keep their cell (tabular figures);
    a space is half a cell; any other glyph takes its ink and one clear
    column."""
    cell = _cell(font)
    if ch in ICON_CHARS:
        return 0, icon_width(ICON_CHARS[ch])
    if ch.isspace():
        return 0, max(2, cell // 2)
    if ch.isdigit():
        return 0, int(round(font.getlength(ch)))
    ink = _ink_columns(ch, font)
    if ink is None:
        return 0, int(round(font.getlength(ch)))
    return -ink[0], ink[1] - ink[0] + 1


@lru_cache(maxsize=4096)
def _layout(text: str, font: ImageFont.FreeTypeFont) -> tuple[tuple[int, ...], int]:
    """Where each letter of ``text``'s cell is drawn, and the total advance."""
    xs, x = [], 0
    for ch in unicodedata.normalize("NFC", text):
        shift, advance = _metrics(ch, font)
        xs.append(x + shift)
        x += advance
    return tuple(xs), x


@lru_cache(maxsize=4096)
def _glyphs(text: str, font: ImageFont.FreeTypeFont, anchor: str):
    """The rendered ink of ``text`` as a mask, and where it sits relative to
    the anchor point (``ls``, ``ms`` or ``rs``: left, middle or right of the
    advance, on the baseline).  Cached: a frame redraws mostly the same
    strings, and rasterising them is most of a frame's cost."""
    if anchor[1] != "s" or anchor[0] not in "lmr":
        raise ValueError(f"unsupported anchor {anchor!r} (use l/m/r with a or s)")
    text = unicodedata.normalize("NFC", text)
    xs, width = _layout(text, font)
    ascender, descender = font.getmetrics()
    pad = font.size + 2
    canvas = Image.new("1", (width + 2 * pad, ascender + descender + 2 * pad), OFF)
    draw = ImageDraw.Draw(canvas)
    draw.fontmode = "1"
    baseline = pad + ascender
    for ch, x in zip(text, xs):
        if not ch.isspace() and ch not in ICON_CHARS:
            draw.text((pad + x, baseline), ch, font=font, fill=ON, anchor="ls")
    ink = canvas.getbbox()
    if ink is None:
        return None
    shift = {"l": 0, "m": -(width // 2), "r": -width}[anchor[0]]
    return ink[0] - pad + shift, ink[1] - baseline, canvas.crop(ink)


def ink_box(text: str, font: ImageFont.FreeTypeFont, anchor: str = "ls") -> tuple[int, int, int, int] | None:
    """Where ``text``'s pixels really are, relative to the anchor point:
    (left, top, right, bottom), right and bottom exclusive; None if blank."""
    glyphs = _glyphs(text, font, anchor)
    if glyphs is None:
        return None
    left, top, mask = glyphs
    return left, top, left + mask.width, top + mask.height


@lru_cache(maxsize=8192)
def has_glyph(ch: str, font: ImageFont.FreeTypeFont = BODY) -> bool:
    """Whether the font draws ``ch`` itself (not its "missing glyph" box)."""
    if ch.isspace():
        return True
    try:
        return font.getmask(ch).getbbox() is not None and _missing(font) != _bitmap(ch, font)
    except Exception:
        return False


@lru_cache(maxsize=64)
def _missing(font):
    return _bitmap("\U0010fffd", font)


@lru_cache(maxsize=8192)
def _bitmap(ch: str, font) -> bytes:
    mask = font.getmask(ch)
    return bytes(mask) + bytes(str(mask.size), "ascii")


def fit(text: str, font: ImageFont.FreeTypeFont, width: int) -> str:
    """``text`` shortened with an ellipsis so that it fits in ``width`` pixels."""
    if text_width(text, font) <= width:
        return text
    while text and text_width(text + ELLIPSIS, font) > width:
        text = text[:-1]
    return text.rstrip() + ELLIPSIS if text else ELLIPSIS


def largest_fitting(text: str, width: int, fonts=(HUGE, BIG, TITLE, STRONG)):
    """The first (largest) font in which ``text`` fits ``width``, else the last."""
    for font in fonts:
        if text_width(text, font) <= width:
            return font
    return fonts[-1]


_BREAKS = re.compile(r"[^\S\u00a0\u202f]+")


def words(text: str) -> list[str]:
    """The words a line may break between: split at spaces, never at a
    no-break space (French "Scores\u00a0:" keeps its colon on its line)."""
    return [w for w in _BREAKS.split(text) if w]


def wrap(text: str, font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    """Greedy word wrap; a word longer than the line is cut with an ellipsis."""
    lines: list[str] = []
    line = ""
    for word in words(text):
        candidate = f"{line} {word}" if line else word
        if text_width(candidate, font) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = word if text_width(word, font) <= width else fit(word, font, width)
    if line:
        lines.append(line)
    return lines


# The letters that reach highest (capital accents, the ring of Å) and lowest
# (descenders, the cedilla of Ç): a line of text needs this many rows.
TALLEST = "ÉÅÊÑÖŁ"
DEEPEST = "gjypqÇ"


@lru_cache(maxsize=64)
def line_extent(font: ImageFont.FreeTypeFont) -> tuple[int, int]:
    """(top, bottom) of the font's ink relative to the baseline, bottom exclusive."""
    return ink_box(TALLEST, font)[1], ink_box(DEEPEST, font)[3]


@lru_cache(maxsize=64)
def ascent(font: ImageFont.FreeTypeFont) -> int:
    """Rows from the top of a line to its baseline: the font's ascender, or
    more where a capital's accent reaches higher."""
    return max(font.getmetrics()[0], -line_extent(font)[0])


@lru_cache(maxsize=64)
def baseline_in(font: ImageFont.FreeTypeFont, height: int) -> int:
    """Where to put the baseline so that the font's tallest and deepest
    letters (É, g, Ç) are inside a box ``height`` pixels high: centred,
    any spare row going above the accents (so that they never touch what is
    over the box).  The body fonts fill a 12-pixel row exactly."""
    top, bottom = line_extent(font)
    spare = max(0, height - (bottom - top))
    return (spare + 1) // 2 - top


def signed(n: int) -> str:
    """A score change as players write it: +3, −7 (a true minus sign), 0."""
    if n > 0:
        return f"+{n}"
    if n < 0:
        return f"\u2212{-n}"
    return "0"


def number(n: int) -> str:
    return f"\u2212{-n}" if n < 0 else str(n)


# -- icons ----------------------------------------------------------------------
# Drawn at the pixel, not taken from a font: a font's ✓ or ▶ at 12 px is a
# mark of two or three pixels.  Each is rows of "#" (ink) and "." (clear),
# 8 rows high at most: they sit on a text line's capital rows (2-9).
ICONS = {
    "check": ("......#",
              ".....##",
              "#...##.",
              "##.##..",
              ".###...",
              "..#...."),
    "play": ("#...",
             "##..",
             "###.",
             "####",
             "###.",
             "##..",
             "#..."),
    "up": ("..#..",
           ".###.",
           "#####"),
    "down": ("#####",
             ".###.",
             "..#.."),
    "token": (".##.",
              "####",
              "####",
              ".##."),
    "lock": (".###.",
             "#...#",
             "#...#",
             "#####",
             "##.##",
             "##.##",
             "#####"),
    # The four suits (Sloppy Seconds): Terminus's own are a few pixels at
    # 12 px (its ♦ a dot).
    "spade": ("...#...",
              "..###..",
              ".#####.",
              "#######",
              "#######",
              ".#.#.#.",
              "..###.."),
    "heart": (".##.##.",
              "#######",
              "#######",
              ".#####.",
              "..###..",
              "...#..."),
    "diamond": ("...#...",
                "..###..",
                ".#####.",
                "#######",
                ".#####.",
                "..###..",
                "...#..."),
    "club": ("..###..",
             "..###..",
             "#######",
             "#######",
             "##.#.##",
             "...#...",
             "..###.."),
    "star": ("...#...",
             "..###..",
             "#######",
             ".#####.",
             "..###..",
             ".##.##.",
             "##...##"),
}


# Characters a screen may write in its text ("Li ✓", "Secret round ▸", "3●"):
# the canvas draws each as its icon, at the pixel, in the line's capital rows.
ICON_CHARS = {"\u2713": "check", "\u25b8": "play", "\u25b6": "play", "\u25b2": "up", "\u25b4": "up",
              "\u25bc": "down", "\u25be": "down", "\u25cf": "token", "\u2605": "star", "\U0001f512": "lock",
              "\u2660": "spade", "\u2665": "heart", "\u2666": "diamond", "\u2663": "club"}


@lru_cache(maxsize=64)
def icon_image(name: str) -> Image.Image:
    rows = ICONS[name]
    image = Image.new("1", (len(rows[0]), len(rows)), OFF)
    for y, row in enumerate(rows):
        for x, ch in enumerate(row):
            if ch == "#":
                image.putpixel((x, y), ON)
    return image


def icon_size(name: str) -> tuple[int, int]:
    rows = ICONS[name]
    return len(rows[0]), len(rows)


def icon_width(name: str) -> int:
    """Pixels an icon takes in a line of text, its clear column included."""
    return icon_size(name)[0] + 1


class Canvas:
    """One frame being drawn: the image, the strings drawn on it (``texts``)
    and every item drawn, in order (``items``: see :mod:`hardware.layout`)."""

    def __init__(self):
        self.image = Image.new("1", (WIDTH, HEIGHT), OFF)
        self.draw = ImageDraw.Draw(self.image)
        self.draw.fontmode = "1"          # no antialiasing: crisp on the OLED
        self.texts: list[str] = []
        self.items: list[dict] = []
        self.private = False             # set by a screen showing one seat's private view

    def _record(self, kind: str, box, **more) -> dict:
        item = {"kind": kind, "box": tuple(box), **more}
        self.items.append(item)
        return item

    # -- text ----------------------------------------------------------------
    def text(self, x: int, y: int, text: str, font=BODY, fill=ON, anchor: str = "la") -> int:
        """Draw ``text`` with its top-left (or ``anchor``) at x, y; return its width."""
        if not text:
            return 0
        self.texts.append(text)
        if anchor[1] == "a":
            y, anchor = y + ascent(font), anchor[0] + "s"
        glyphs = _glyphs(text, font, anchor)
        if glyphs is not None:
            left, top, mask = glyphs
            self.image.paste(fill, (x + left, y + top), mask)
            self._record("text", (x + left, y + top, x + left + mask.width, y + top + mask.height),
                         text=text, font=font, fill=fill, mask=mask)
        if any(ch in ICON_CHARS for ch in text):
            parent = self.items[-1] if glyphs is not None else None
            first = len(self.items)
            self._inline_icons(x, y, text, font, fill, anchor)
            for item in self.items[first:]:
                item["parent"] = parent       # inside its text's ink box: not an overlap
        return text_width(text, font)

    def _inline_icons(self, x: int, y: int, text: str, font, fill, anchor: str) -> None:
        """Draw the icon characters of a text at their places in it."""
        text = unicodedata.normalize("NFC", text)
        xs, width = _layout(text, font)
        shift = {"l": 0, "m": -(width // 2), "r": -width}[anchor[0]]
        cap_top = ink_box("H", font)[1]                  # negative: rows above the baseline
        for ch, cx in zip(text, xs):
            if ch in ICON_CHARS:
                name = ICON_CHARS[ch]
                h = icon_size(name)[1]
                self.icon(x + shift + cx, y + cap_top + (-cap_top - h) // 2, name, fill)

    def text_fit(self, x: int, y: int, text: str, width: int, font=BODY, fill=ON) -> int:
        return self.text(x, y, fit(text, font, width), font, fill)

    def right(self, x_right: int, y: int, text: str, font=BODY, fill=ON) -> int:
        return self.text(x_right, y, text, font, fill, anchor="ra")

    def center(self, y: int, text: str, font=BODY, x0: int = 0, x1: int = WIDTH, fill=ON) -> int:
        x0, x1 = max(x0, MARGIN), min(x1, WIDTH - MARGIN)
        text = fit(text, font, x1 - x0 + 1)     # the last letter's clear column may fall outside
        return self.text((x0 + x1 + 1) // 2, y, text, font, fill, anchor="ma")

    def icon(self, x: int, y: int, name: str, fill=ON) -> int:
        """Draw icon ``name`` with its top-left at x, y; return the width it takes."""
        image = icon_image(name)
        self.image.paste(fill, (x, y), image)
        self._record("icon", (x, y, x + image.width, y + image.height), name=name, fill=fill, mask=image)
        return icon_width(name)

    def icon_in_line(self, x: int, line_top: int, name: str, fill=ON) -> int:
        """An icon on a 12-row text line whose top is ``line_top``: centred on
        its capital rows (2-9)."""
        h = icon_size(name)[1]
        return self.icon(x, line_top + 2 + (8 - h) // 2, name, fill)

    # -- shapes --------------------------------------------------------------
    def rect(self, x0: int, y0: int, x1: int, y1: int, fill=None, outline=ON) -> None:
        self.draw.rectangle((x0, y0, x1, y1), fill=fill, outline=outline)
        self._record("rect", (x0, y0, x1 + 1, y1 + 1), fill=fill, outline=outline)

    def fill(self, x0: int, y0: int, x1: int, y1: int, value=ON) -> None:
        self.draw.rectangle((x0, y0, x1, y1), fill=value, outline=value)
        self._record("fill", (x0, y0, x1 + 1, y1 + 1), fill=value)

    def hline(self, x0: int, x1: int, y: int) -> None:
        self.draw.line((x0, y, x1, y), fill=ON)
        self._record("line", (x0, y, x1 + 1, y + 1), fill=ON)

    def shape(self, box, draw_fn) -> None:
        """Any other drawing (a polygon, a track): ``draw_fn(self.draw)``, recorded with ``box``."""
        draw_fn(self.draw)
        self._record("shape", box, fill=ON)

    def dots(self, x: int, y: int, count: int, size: int = 4, gap: int = 1, limit: int = 5) -> int:
        """``count`` tokens (the token icon); past ``limit`` a number and one token."""
        if count > limit:
            width = self.text(x, y - 2, str(count), SMALL)
            return width + self.icon(x + width, y, "token")
        for i in range(count):
            self.icon(x + i * (size + gap), y, "token")
        return count * (size + gap)

    def bar(self, x: int, y: int, width: int, height: int, value: int, limit: int = 20) -> None:
        """A horizontal bar from the centre: right for positive, left for
        negative, full at ``limit`` (the round's ±20); ticks mark 0 and ±limit."""
        mid = x + width // 2
        half = width // 2 - 1
        self.draw.line((x, y + height // 2, x + width - 1, y + height // 2), fill=ON)   # the track
        for tick in (x, mid, x + width - 1):
            self.draw.line((tick, y, tick, y + height - 1), fill=ON)
        span = round(min(abs(value), limit) * half / limit)
        if value > 0 and span:
            self.draw.rectangle((mid, y + 1, mid + span, y + height - 2), fill=ON)
        elif value < 0 and span:
            self.draw.rectangle((mid - span, y + 1, mid, y + height - 2), fill=ON)
        self._record("shape", (x, y, x + width, y + height), fill=ON)

    def paste(self, image: Image.Image, x: int, y: int) -> None:
        self.image.paste(image, (x, y))
        self._record("shape", (x, y, x + image.width, y + image.height), fill=ON)

    # -- composite -----------------------------------------------------------
    def header(self, left: str, right: str = "") -> None:
        """The top line (rows 1-12) with a rule under it (row 13)."""
        width = WIDTH - 2 * MARGIN
        if right:
            # The title says what the screen asks: it stays whole, and the
            # right-hand part (a count, a round) gives way first.
            keep = min(text_width(left, SMALL), width - 2 * text_width("00", SMALL))
            right = fit(right, SMALL, width - keep - 2)
            width -= text_width(right, SMALL) + 2
        self.text_fit(MARGIN, HEADER_Y, left, width, SMALL)      # the title first: texts[0]
        if right:
            self.right(WIDTH - MARGIN + 1, HEADER_Y, right, SMALL)
        self.hline(0, WIDTH - 1, RULE_Y)

    def footer(self, text: str) -> None:
        """The bottom line: its descenders end on the last row but one; the
        band under it is cleared from the row above its ink."""
        box = ink_box(text, SMALL)
        top = HINT_Y + BASELINE + (box[1] if box else 0)
        self.fill(0, top, WIDTH - 1, HEIGHT - 1, OFF)
        self.center(HINT_Y, text, SMALL)

    def row(self, y: int, text: str, selected: bool, height: int = LINE, right: str = "", font=BODY,
            icon: str | None = None) -> None:
        """A list row whose line starts at ``y``; the selected one is drawn
        inverted on a bar that takes the row above and below the line
        (rows ``y-1`` to ``y+height``), so its letters keep a lit row on
        each side.  ``right`` is a text (or ``icon`` an icon) at the right end."""
        fg = ON
        height = max(height, LINE) if font.size <= LINE else height
        if selected:
            self.fill(0, y - 1, WIDTH - 1, y + height, ON)
            fg = OFF
        baseline = y + baseline_in(font, height)
        width, end = RIGHT - LEFT + 1, RIGHT + 1
        if icon:
            iw, ih = icon_size(icon)
            self.icon(end - iw, baseline - BASELINE + 2 + (8 - ih) // 2, icon, fill=fg)
            width -= iw + 3
            end -= iw + 3
        if right:
            # The right part never pushes the label out: it gets what the
            # label (up to half the row) leaves.
            keep = min(text_width(text, font), width // 2)
            right = fit(right, font, max(width - keep - 3, text_width(ELLIPSIS, font)))
            width -= self.text(end, baseline, right, font, fill=fg, anchor="rs") + 3
        self.text(LEFT, baseline, fit(text, font, width), font, fill=fg, anchor="ls")

    def panel(self, lines: list[str], font=BODY) -> None:
        """A framed message over the frame (errors, notices).  It clears the
        whole frame first: what was under it is hidden, never cut."""
        line_h = PITCH if font.size <= LINE else font.size + 1
        lines = lines[: (HEIGHT - 6) // line_h]
        height = len(lines) * line_h + 4
        top = (HEIGHT - height) // 2
        self.fill(0, 0, WIDTH - 1, HEIGHT - 1, OFF)
        self.items[-1]["overlay"] = True
        self.rect(MARGIN, top, WIDTH - 1 - MARGIN, top + height - 1)
        for i, line in enumerate(lines):
            self.center(top + 2 + i * line_h, line, font, MARGIN + 3, WIDTH - MARGIN - 3)


def card_row(c: Canvas, y: int, cards: list[int], cursor: int | None, font=BIG) -> None:
    """A hand of cards as a row of digits, the one under the cursor boxed and inverted.

    Up to ten cards fit: each gets a 12 px cell."""
    if not cards:
        return
    cell = min(12, (WIDTH - 2) // len(cards))
    left = (WIDTH - cell * len(cards)) // 2
    top, bottom = line_extent(font)
    height = bottom - top + 2
    for i, card in enumerate(cards):
        x = left + i * cell
        fg = ON
        if i == cursor:
            c.fill(x, y, x + cell - 1, y + height - 1)
            fg = OFF
        c.text(x + cell // 2, y + 1 - top, str(card), font, fill=fg, anchor="ms")
