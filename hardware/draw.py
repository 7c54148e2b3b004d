"""Drawing on the 128x64 one-bit OLED: fonts, a recording canvas, small widgets.

Every frame is drawn on a fresh :class:`Canvas` (a mode "1" PIL image).  The
canvas also *records every string it draws*, in order: the tests read those
strings to check what a frame says (and, above all, what it must not say
during a secret entry) without OCR.

Fonts are DejaVu Sans, shipped in ``hardware/fonts`` with its licence, so
frames are the same on every machine and every European name has its letters
(Pillow's built-in font draws é, ç, Ł as empty boxes).  Each glyph is drawn
in one bit, without antialiasing, hinted to the pixel grid (crisp from 10 px
up), and the box places the glyphs itself at whole-pixel advances (see
:func:`_layout`): what the panel shows does not depend on which layout
libraries the system has.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 128, 64
ON, OFF = 255, 0          # pixel values of a mode "1" image (not 1/0)
FONT_DIR = Path(__file__).with_name("fonts")
REGULAR = FONT_DIR / "DejaVuSans.ttf"
BOLD = FONT_DIR / "DejaVuSans-Bold.ttf"
ELLIPSIS = "…"


# Pillow's basic layout engine, chosen explicitly.  Left to itself, Pillow
# uses raqm when the system has libfribidi (most desktops), the basic engine
# when it has not (a Pi's minimal install): text would then measure wider on
# the Pi than on the laptop where the screens were laid out, and labels would
# be cut.  The basic engine is also the right one for a 1-bit panel: its
# advances are the *hinted*, whole-pixel ones the 1-bit glyphs were drawn
# for.  raqm places glyphs at unhinted, fractional positions and rounds each
# one: at 10-11 px that opens gaps inside words ("Se at", "FI GHT?").  Names
# need no shaping (no bidi, no ligatures), which is all raqm would add.
LAYOUT = ImageFont.Layout.BASIC


def _font(path: Path, size: int, layout=LAYOUT) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(path), size, layout_engine=layout)


# The sizes the screens use (pixels).  10 is the smallest that stays legible.
# Rows of names are 12 pixels apart, and a line of DejaVu at 10 px needs
# exactly 12 rows of ink (the acute of É 10 rows above the baseline, the tail
# of g and the cedilla of Ç 2 rows below); at 11 px it needs 13, so a
# capital's accent ran into the descenders of the row above.
SMALL = _font(REGULAR, 10)     # footers, hints, headers
BODY = _font(REGULAR, 10)      # rows of names and scores
STRONG = _font(BOLD, 10)       # the highlighted row, scores
TITLE = _font(BOLD, 13)        # screen titles
BIG = _font(BOLD, 16)          # card digits, the name to pass the box to
HUGE = _font(BOLD, 22)         # a single big number or name

ALL_FONTS = {"SMALL": SMALL, "BODY": BODY, "STRONG": STRONG, "TITLE": TITLE, "BIG": BIG, "HUGE": HUGE}


@lru_cache(maxsize=4096)
def text_width(text: str, font: ImageFont.FreeTypeFont) -> int:
    """How many pixels ``text`` advances: the sum of its letters' whole-pixel advances."""
    return _layout(text, font)[1]


@lru_cache(maxsize=8192)
def _advance(ch: str, font: ImageFont.FreeTypeFont) -> int:
    return int(round(font.getlength(ch)))


@lru_cache(maxsize=8192)
def _kern(a: str, b: str, font: ImageFont.FreeTypeFont) -> int:
    """The pair's kerning, in whole pixels (0 for nearly every pair of DejaVu at these sizes)."""
    return int(round(font.getlength(a + b) - font.getlength(a) - font.getlength(b)))


@lru_cache(maxsize=4096)
def _layout(text: str, font: ImageFont.FreeTypeFont) -> tuple[tuple[int, ...], int]:
    """Where each letter of ``text`` starts, and the total advance.

    The box lays text out itself, letter by letter at each glyph's hinted,
    whole-pixel advance (plus the pair's kerning, rounded): the hinted 1-bit
    glyphs were drawn for exactly those advances.  Pillow's own layout (raqm,
    and its basic engine for some pairs) puts letters at fractional
    positions and rounds them one by one, which opened gaps inside words."""
    xs, x, previous = [], 0, None
    for ch in unicodedata.normalize("NFC", text):
        if previous is not None:
            x += _kern(previous, ch, font)
        xs.append(x)
        x += _advance(ch, font)
        previous = ch
    return tuple(xs), x


@lru_cache(maxsize=4096)
def _glyphs(text: str, font: ImageFont.FreeTypeFont, anchor: str):
    """The rendered ink of ``text`` as a mask, and where it sits relative to
    the anchor point (``ls``, ``ms`` or ``rs``: left, middle or right of the
    advance, on the baseline).  Cached: a frame redraws mostly the same
    strings (names, digits, labels), and rasterising them is most of a
    frame's cost.

    The mask is cut to the ink actually drawn, not to ``font.getbbox``:
    Pillow's box is one row short at the top for accented capitals (its
    "É" starts a row below the acute's first pixel), and a mask cut to it
    clipped the accent to a dot."""
    if anchor[1] != "s" or anchor[0] not in "lmr":
        raise ValueError(f"unsupported anchor {anchor!r} (use l/m/r with a or s)")
    text = unicodedata.normalize("NFC", text)
    xs, width = _layout(text, font)
    ascender, descender = font.getmetrics()
    pad = font.size + 2                 # room for accents above the ascender, overhangs
    canvas = Image.new("1", (width + 2 * pad, ascender + descender + 2 * pad), OFF)
    draw = ImageDraw.Draw(canvas)
    draw.fontmode = "1"
    baseline = pad + ascender
    for ch, x in zip(text, xs):
        if not ch.isspace():
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


def wrap(text: str, font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    """Greedy word wrap; a word longer than the line is cut with an ellipsis."""
    lines: list[str] = []
    line = ""
    for word in text.split():
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


class Canvas:
    """One frame being drawn: the image plus the strings drawn on it."""

    def __init__(self):
        self.image = Image.new("1", (WIDTH, HEIGHT), OFF)
        self.draw = ImageDraw.Draw(self.image)
        self.draw.fontmode = "1"          # no antialiasing: crisp on the OLED
        self.texts: list[str] = []
        self.private = False             # set by a screen showing one seat's private view

    # -- text ----------------------------------------------------------------
    def text(self, x: int, y: int, text: str, font=BODY, fill=ON, anchor: str = "la") -> int:
        """Draw ``text`` with its top-left (or ``anchor``) at x, y; return its width."""
        if not text:
            return 0
        self.texts.append(text)
        if anchor[1] == "a":
            # "Top" means the top of the tallest accent: at 16 px DejaVu's
            # acute of É rises one row above the font's ascender.
            y, anchor = y + ascent(font), anchor[0] + "s"
        glyphs = _glyphs(text, font, anchor)
        if glyphs is not None:
            left, top, mask = glyphs
            self.image.paste(fill, (x + left, y + top), mask)
        return text_width(text, font)

    def text_fit(self, x: int, y: int, text: str, width: int, font=BODY, fill=ON) -> int:
        return self.text(x, y, fit(text, font, width), font, fill)

    def right(self, x_right: int, y: int, text: str, font=BODY, fill=ON) -> int:
        return self.text(x_right, y, text, font, fill, anchor="ra")

    def center(self, y: int, text: str, font=BODY, x0: int = 0, x1: int = WIDTH, fill=ON) -> int:
        text = fit(text, font, x1 - x0)
        return self.text((x0 + x1) // 2, y, text, font, fill, anchor="ma")

    # -- shapes --------------------------------------------------------------
    def rect(self, x0: int, y0: int, x1: int, y1: int, fill=None, outline=ON) -> None:
        self.draw.rectangle((x0, y0, x1, y1), fill=fill, outline=outline)

    def fill(self, x0: int, y0: int, x1: int, y1: int, value=ON) -> None:
        self.draw.rectangle((x0, y0, x1, y1), fill=value, outline=value)

    def hline(self, x0: int, x1: int, y: int) -> None:
        self.draw.line((x0, y, x1, y), fill=ON)

    def dots(self, x: int, y: int, count: int, size: int = 4, gap: int = 1, limit: int = 5) -> int:
        """``count`` filled squares (tokens); past ``limit`` a number is drawn instead."""
        if count > limit:
            return self.text(x, y - 2, f"{count}\u25cf", SMALL)
        for i in range(count):
            left = x + i * (size + gap)
            self.fill(left, y, left + size - 1, y + size - 1)
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
            self.fill(mid, y + 1, mid + span, y + height - 2)
        elif value < 0 and span:
            self.fill(mid - span, y + 1, mid, y + height - 2)

    def paste(self, image: Image.Image, x: int, y: int) -> None:
        self.image.paste(image, (x, y))

    # -- composite -----------------------------------------------------------
    def header(self, left: str, right: str = "") -> None:
        """The top line (y 0..10) with a rule under it."""
        width = WIDTH
        if right:
            width -= self.right(WIDTH - 1, 0, right, SMALL) + 4
        self.text_fit(0, 0, left, width, SMALL)
        self.hline(0, WIDTH - 1, 12)

    def footer(self, text: str) -> None:
        """The bottom line: its deepest letters end on the panel's last row."""
        self.center(HEIGHT - ascent(SMALL) - line_extent(SMALL)[1], text, SMALL)

    def row(self, y: int, text: str, selected: bool, height: int = 12, right: str = "", font=BODY) -> None:
        """A list row; the selected one is drawn inverted.  The text sits on a
        baseline chosen so that capital accents (É) and descenders (g) both
        stay inside the row."""
        fg = ON
        if selected:
            # When the letters fill the row, an accent on its top line would
            # be a notch open to the dark above the bar: the bar then starts
            # one line higher (where the row above has at most a tail of g).
            top, bottom = line_extent(font)
            lift = 1 if y > 0 and bottom - top >= height else 0
            self.fill(0, y - lift, WIDTH - 1, y + height - 1)
            fg = OFF
        baseline = y + baseline_in(font, height)
        width = WIDTH - 4
        if right:
            width -= self.text(WIDTH - 3, baseline, right, font, fill=fg, anchor="rs") + 4
        self.text(2, baseline, fit(text, font, width), font, fill=fg, anchor="ls")

    def panel(self, lines: list[str], font=BODY) -> None:
        """A framed message box over the middle of the frame (errors, notices)."""
        line_h = font.size + 2
        lines = lines[: (HEIGHT - 6) // line_h]
        height = len(lines) * line_h + 6
        top = (HEIGHT - height) // 2
        self.fill(2, top - 1, WIDTH - 3, top + height, OFF)
        self.rect(3, top, WIDTH - 4, top + height - 1)
        for i, line in enumerate(lines):
            self.center(top + 3 + i * line_h, line, font, 6, WIDTH - 6)


def card_row(c: Canvas, y: int, cards: list[int], cursor: int | None, font=BIG) -> None:
    """A hand of cards as a row of digits, the one under the cursor boxed and inverted.

    Up to ten cards fit: each gets a 12 px cell."""
    if not cards:
        return
    cell = min(12, WIDTH // len(cards))
    left = (WIDTH - cell * len(cards)) // 2
    height = font.size + 3
    for i, card in enumerate(cards):
        x = left + i * cell
        fg = ON
        if i == cursor:
            c.fill(x, y, x + cell - 1, y + height)
            fg = OFF
        c.text(x + cell // 2, y + 1, str(card), font, fill=fg, anchor="ma")
