"""Seats two a row: the compact layout of the games' score screens (issue 19).

Only three 13-px text rows fit between the header's rule and the hint line,
and a score screen must show every seat at once: so each row holds two
seats, in 62-px cells 4 px apart, each with a mark column (▶, a boxed
letter), the name (abbreviated distinctly, never dropped) and a right-aligned
value.  Three rows hold six seats.
"""

from __future__ import annotations

import re

from .. import draw as d
from ..draw import Canvas
from .base import short_name

CELL_W = 62                      # a seat's cell; the second starts at CELL_W + GAP
GAP = 4
MARK_W = 8                       # the mark column, when a grid has marks
CELLS = 6                        # seats the grid shows at once (three rows)


def distinct_names(players: list[str], width: int, font=d.BODY) -> list[str]:
    """Every seat's name in ``width`` pixels (:func:`short_name`), and where
    two still read the same ("Marc." and "Marc."), the initials of their
    first two parts instead ("M-A." and "M-B."): at the table, two seats
    never share a label."""
    shown = [short_name(n, players, width, font) for n in players]
    def ambiguous(i: int) -> bool:
        # Two labels alike, or a label that is the beginning of another
        # seat's name too ("Marc." beside Marc-Bernard).
        stem = shown[i][:-1].casefold() if shown[i].endswith(".") else None
        return shown.count(shown[i]) > 1 or (stem is not None and any(
            o.casefold().startswith(stem) for j, o in enumerate(players) if j != i))
    alike = [ambiguous(i) for i in range(len(players))]
    for i, name in enumerate(players):
        if alike[i]:
            parts = re.findall(r"(\w)\w*([\s-]?)", name)
            initials = "".join(a + b for a, b in parts[:2]).rstrip(" -")
            shown[i] = d.fit(initials.replace(" ", "") + ".", font, width)
    return shown


def cell(k: int, y: int = d.ROW_Y, pitch: int = d.PITCH) -> tuple[int, int]:
    """The left edge and line top of the ``k``-th cell of a grid starting at ``y``."""
    return (k % 2) * (CELL_W + GAP), y + (k // 2) * pitch


def boxed_letter(c: Canvas, x: int, line_top: int, letter: str) -> int:
    """A letter inverted in a small lit box (the dealer's "D"), on a text
    line whose top is ``line_top``: the box holds the letter with a lit
    pixel all round.  Returns its width."""
    box = d.ink_box(letter, d.SMALL)
    w = box[2] - box[0]
    top = line_top + d.BASELINE + box[1] - 1
    c.fill(x, top, x + w + 1, line_top + d.BASELINE + box[3])
    c.text(x + 1 - box[0], line_top, letter, d.SMALL, fill=d.OFF)
    return w + 2


def seat_grid(c: Canvas, players: list[str], right: list[str], seats=None, y: int = d.ROW_Y,
              marks: dict | None = None, font=d.BODY, right_font=d.STRONG, pitch: int = d.PITCH,
              cells: int = CELLS) -> None:
    """``seats`` (default: all) two a row from ``y``: each cell a mark
    (``marks[seat]``: an icon character such as "▶", or ("box", "D")),
    the name, and ``right[seat]`` right-aligned.  ``pitch``: the rows'
    pitch (the 12-px LINE where no row is highlighted and four rows must fit)."""
    seats = list(range(len(players))) if seats is None else list(seats)
    widest = max([d.text_width(right[s], right_font) for s in seats] + [0])
    mark_w = MARK_W if marks else 0
    room = CELL_W - 1 - mark_w - widest - 4      # a name ends with its clear column: 4 clear before the value
    names = distinct_names(players, room, font)
    for k, seat in enumerate(seats[:cells]):
        x0, row_y = cell(k, y, pitch)
        mark = (marks or {}).get(seat)
        if isinstance(mark, tuple):
            boxed_letter(c, x0 + 1, row_y, mark[1])
        elif mark:
            c.icon_in_line(x0 + 1, row_y, d.ICON_CHARS[mark])
        c.text(x0 + 2 + mark_w, row_y, names[seat], font)
        c.right(x0 + CELL_W, row_y, right[seat], right_font)


def named_header(c: Canvas, make, name: str, players, right: str = "") -> None:
    """A header saying ``make(name)`` ("Zoé's last dice") whole: the name is
    abbreviated distinctly (:func:`short_name`) so that the words around it
    and the ``right`` part stay."""
    room = d.WIDTH - 2 * d.MARGIN - (d.text_width(right, d.SMALL) + 3 if right else 0)
    room -= d.text_width(make(""), d.SMALL)
    players = list(players)
    shown = (distinct_names(players, max(room, 1), d.SMALL)[players.index(name)] if name in players
             else short_name(name, players, max(room, 1), d.SMALL))
    c.header(make(shown), right)


def columns(c: Canvas, y: int, texts: list[str], font=d.SMALL) -> None:
    """One text per seat, each centred in its column (up to four seats: 31 px
    or more each)."""
    n = max(1, len(texts))
    width = (d.WIDTH - 2 * d.MARGIN) // n
    for k, text in enumerate(texts):
        x0 = d.MARGIN + k * width
        c.center(y, text, font, x0, x0 + width - 1)


def name_columns(c: Canvas, y: int, players: list[str]) -> None:
    """The seats' names in their columns, abbreviated distinctly to fit."""
    width = (d.WIDTH - 2 * d.MARGIN) // max(1, len(players))
    columns(c, y, distinct_names(players, width - 2, d.SMALL), d.SMALL)
