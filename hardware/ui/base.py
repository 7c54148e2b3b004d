"""What a game's box controller is, and the screens games share.

A controller is a small state machine for one game in progress.  The box's
:class:`~hardware.ui.app.App` gives it three things, all on the box's single
worker thread:

``sync(public, change)``
    after every change of the table (from the buttons, a phone, undo...):
    the new public state and the session's ``Change`` (None at start).
    The controller re-derives where it is *from the state*, so an entry made
    on a phone moves the box on just as one made on the buttons.
``key(name) -> bool``
    a debounced button: ``up``, ``down``, ``ok``, ``back`` (a long press of
    BACK never reaches it: that is undo, handled by the app).  Return False
    for a BACK you do not use: the app then opens the menu.
``draw(canvas, public)``
    the current frame; set ``self.private = True`` while drawing one seat's
    private view (its own picks).

**Private screens and the mirror.**  ``GET /oled.png`` shows the box's
screen to anyone on the network.  A controller lists in ``PRIVATE_MODES``
every mode in which a seat chooses a secret, and the "pass the box" prompts
that lead into one (the moves between them follow that seat's key presses);
while :meth:`Controller.is_private` is true the mirror gets
:meth:`Controller.public_frame` instead: a frame drawn from the public state
only ("Ben is choosing…"), the same whatever the secret and however many
times the cursor moved.

Actions go through ``self.app.submit(action)``: refused ones show their
translated message for a few seconds and return False.

**What the screens say.**  Every game screen ends with a hint line
(:func:`hint_line`): what OK and BACK do next ("OK: next bid · BACK:
menu").  A result screen (a reveal, a round or hand over) goes on with OK
and by itself after ``REVEAL_S``; BACK there goes on and opens the menu.
The undo prompt names what it takes back through the controller's
:meth:`Controller.describe_undo`, from an :class:`UndoStep` in which a
secret entry has lost its value: only the seat that entered can be named.

To plug in a new game: subclass :class:`Controller`, set ``game_id``, and add
the class to ``hardware.ui.CONTROLLERS``.  Games without one get the generic
screen (public scores only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


from companion.i18n import _

from .. import draw as d
from ..draw import Canvas

REVEAL_S = 15.0      # a reveal / round result stays this long unless a button dismisses it


@dataclass(frozen=True)
class UndoStep:
    """What an undo would take back, as the undo prompt may show it.

    ``action`` is the last action in effect; for a secret entry
    (``secret``) only its ``type`` and ``seat`` are kept: the prompt can say
    *who* entered, never *what*.  ``before`` and ``after`` are the public
    states on either side of it (the undo goes back to ``before``)."""

    action: dict
    secret: bool
    before: dict
    after: dict

    def name(self, seat) -> str:
        players = self.before.get("players") or []
        return players[seat] if isinstance(seat, int) and 0 <= seat < len(players) else "?"


def describe_undo(step: UndoStep) -> str:
    """The generic description of an undo (games without their own):
    whose entry, never its value."""
    seat = step.action.get("seat")
    if step.secret:
        return _("{name}'s secret entry", name=step.name(seat))
    if isinstance(seat, int):
        return _("{name}'s last entry", name=step.name(seat))
    return ""


class Controller:
    game_id: str = ""
    # Modes the web mirror never shows (see the module's docstring).
    PRIVATE_MODES: tuple[str, ...] = ()
    # Options offered on the new-game screen: dicts with key, label (N_ text),
    # choices(players) -> [(value, text)], default(players) -> value.
    OPTIONS: list[dict] = []

    def __init__(self, app):
        self.app = app
        self.private = False
        self.public: dict = {}

    def sync(self, public: dict, change) -> None:
        self.public = public

    def key(self, name: str) -> bool:
        return False

    def draw(self, c: Canvas, public: dict) -> None:
        raise NotImplementedError

    def is_private(self) -> bool:
        """Whether the screen up now must stay off the web mirror."""
        return self.private or getattr(self, "mode", None) in self.PRIVATE_MODES

    def long_lived(self) -> bool:
        """Whether the screen up now may stay up long (the board, a result
        waiting): the panel then moves it by a pixel now and then
        (hardware/panel_care.py).  A seat's private pick is short."""
        return not self.is_private()

    def public_frame(self, c: Canvas, public: dict) -> None:
        """What the mirror shows while :meth:`is_private`: the controller's
        ``pass`` screen drawn on a mirror canvas (``c.mirror``), where
        :func:`pass_screen` says "<name> is choosing…".  Only public facts
        (who has locked, whose turn) go into it."""
        self._draw_pass(c, public)

    def leave_private(self) -> None:
        """Someone opened the menu or undo over a private view: close it (the
        cursor, i.e. the seat's pick, must not come back when the menu closes)."""

    def locked_seats(self, public: dict) -> set[int]:
        """Seats whose secret entry is locked (their LED is lit)."""
        return set()

    def describe_undo(self, step: UndoStep) -> str:
        """What the undo prompt says it takes back ("Ben's locked card"):
        drawn from ``step`` only, so a secret's value can never reach it."""
        return describe_undo(step)


# -- shared drawing --------------------------------------------------------------

def lead_marker(c: Canvas, x: int, y: int, fill=d.ON) -> None:
    """The ▶ icon, 4 px wide and 7 high from x, y (who leads); never on the
    panel's clear edge column."""
    c.icon(max(x, d.MARGIN), y, "play", fill)


def short_name(name: str, others=(), width: int = d.WIDTH - 2 * d.MARGIN, font=d.BODY) -> str:
    """``name`` as it fits in ``width`` pixels: whole if it fits, else its
    longest beginning that fits followed by a full stop ("Marc-A."; never
    one that drops a single letter, "Ingri."), chosen
    so that it is the beginning of no other name at the table (``others``)
    when the width allows: "Marc-A." and "Marc-B.", never two "Marc…".
    Never empty: a name is never dropped."""
    if d.text_width(name, font) <= width:
        return name
    rivals = [o.casefold() for o in others if o != name]
    best = None
    for k in range(len(name) - 1, 0, -1):
        prefix = name[:k].rstrip(" -.")
        if not prefix:
            continue
        if sum(ch.isalnum() for ch in name[len(prefix):]) < 2:
            continue        # "Ingri." says no less than "Ingrid": an abbreviation drops two letters or more
        candidate = prefix + "."
        if d.text_width(candidate, font) > width:
            continue
        if best is None:
            best = candidate
        if not any(r.startswith(prefix.casefold()) for r in rivals):
            return candidate
        break       # shorter prefixes are shared too
    # The beginning is shared ("Marc-…"): the initials of its parts ("M-A."),
    # distinct when the parts differ.
    initials = re.sub(r"(\w)\w*", r"\1", name).replace(" ", "") + "."
    if d.text_width(initials, font) <= width and initials.casefold() not in [
            re.sub(r"(\w)\w*", r"\1", r).replace(" ", "") + "." for r in rivals]:
        return initials
    return best or name[:1] + "."


def center_named(c: Canvas, y: int, make, name: str, fonts=(d.TITLE, d.STRONG), width: int = d.WIDTH - 2,
                 others=()) -> None:
    """Centre ``make(name)`` ("Token for Élodie") on one line: in the largest
    of ``fonts`` where it fits, else in the last with the *name* abbreviated
    (:func:`short_name`, distinct among ``others``), so that the words around
    it are always read whole."""
    width = min(width, d.WIDTH - 2 * d.MARGIN)
    text = make(name)
    font = d.largest_fitting(text, width, fonts)
    if d.text_width(text, font) > width:
        room = width - d.text_width(text, font) + d.text_width(name, font)
        text = make(short_name(name, others, max(room, 0), font))
    c.center(y, text, font)


def legend_header(c: Canvas, title: str, word: str, short: str | None = None) -> None:
    """A header whose right end explains the ▶ on the rows ("▶ leads").  If
    the title and the legend do not fit, the ``short`` title ("M10 · coup
    9"): the legend is the one thing the screen must not lose."""
    font = d.SMALL
    legend = d.text_width(word, font) + d.icon_width("play") + 1
    if d.text_width(title, font) + legend + 3 > d.WIDTH - 2 * d.MARGIN:
        title = short or title
    c.text_fit(d.MARGIN, d.HEADER_Y, title, d.WIDTH - 2 * d.MARGIN - legend - 3, font)
    x = d.WIDTH - d.MARGIN - legend + 1
    c.icon_in_line(x, d.HEADER_Y, "play")
    c.right(d.WIDTH - d.MARGIN + 1, d.HEADER_Y, word, font)
    c.hline(0, d.WIDTH - 1, d.RULE_Y)


def names_with_mark(c: Canvas, y: int, names: list[str], mark: str = "\u2713", others=(), font=d.STRONG) -> None:
    """A centred line of names, each followed by ``mark`` ("Li ✓  Ingrid ✓",
    the mark drawn as its icon): every name is shown, the longest ones
    abbreviated first (distinctly, :func:`short_name`) when they do not all fit."""
    if not names:
        return
    gap = d.text_width(" ", font)
    room = d.WIDTH - 2 * d.MARGIN

    def total(shown):
        return sum(d.text_width(f"{n} {mark}", font) for n in shown) + gap * (len(shown) - 1)

    shown = list(names)
    limits = [d.text_width(n, font) for n in names]
    while total(shown) > room and max(limits) > 0:
        longest = limits.index(max(limits))          # the longest name gives way first
        limits[longest] -= 1
        shown[longest] = short_name(names[longest], others or names, limits[longest], font)
    x = (d.WIDTH - total(shown)) // 2
    for n in shown:
        x += c.text(x, y, f"{n} {mark}", font) + gap


def pass_screen(c: Canvas, header: str, header_right: str, done: list[str], name: str, hint: str = "",
                others=()) -> None:
    """The shared screen between two secret entries: who has locked (names
    only, never a value), and whom to pass the box to; ``hint`` says what
    OK and BACK do (OK: that seat has the box).  It shows nothing that
    depends on any seat's pick.  On the web mirror (``c.mirror``) it stands
    for the whole secret entry: "<name> is choosing…", no prompt to press OK.

    The prompt is on its own line and the name on the next, in the largest
    font where it fits whole, else abbreviated distinctly among ``others``."""
    c.header(header, header_right)
    everyone = list(others) or list(done) + [name]
    rows = [d.ROW_Y + i * d.PITCH for i in range(3)]
    if done:
        names_with_mark(c, rows[0], done, "\u2713", everyone)
        prompt_y, name_y, fonts = rows[1], rows[2], (d.STRONG,)
    else:
        prompt_y, name_y, fonts = rows[0] + 2, rows[1] + 2, (d.BIG, d.TITLE, d.STRONG)
    width = d.WIDTH - 2 * d.MARGIN
    font = d.largest_fitting(name, width, fonts)
    shown = short_name(name, everyone, width, font)
    if getattr(c, "mirror", False):
        top, bottom = d.line_extent(font)
        c.center(prompt_y, shown, font)
        c.center(prompt_y + d.ascent(font) + bottom + 1, _("is choosing\u2026"), d.SMALL)
        return
    c.center(prompt_y, _("Pass the box to"), d.SMALL)
    c.center(name_y, shown, font)
    hint_line(c, hint or _("OK: ready"))


def hint_line(c: Canvas, text: str) -> None:
    """The bottom line saying what the buttons do next ("OK: next bid ·
    BACK: menu"), on a cleared band (the row above it too) so that it stays
    whole over whatever the screen drew above it.  Every hint fits the
    panel as written, in every language, spaces and all (never squeezed to
    "OK:suite·BACK:retour"): tests/box/test_typography.py measures each."""
    # The band is cleared from the hint's own topmost ink: a hint without
    # accented capitals leaves its line's top rows (51, often 52) to the
    # descenders of the last text row above it (rows 40-51).
    box = d.ink_box(text, HINT_FONT)
    top = HINT_Y + d.BASELINE + (box[1] if box else 0)
    c.fill(0, top, d.WIDTH - 1, d.HEIGHT - 1, d.OFF)
    c.center(HINT_Y, text, HINT_FONT)


HINT_Y = d.HINT_Y           # the hint line's top (row 51): its descenders end on row 62
HINT_FONT = d.SMALL


def scroll_mark(c: Canvas, x: int, y: int, up: bool, fill=d.ON) -> None:
    """The ▲ or ▼ icon, 5 px wide and 3 high from ``y``: more rows above (UP
    shows them) or below, at the right end of the first or last row shown."""
    c.icon(x, y, "up" if up else "down", fill)


def score_rows(c: Canvas, players: list[str], scores: list[int], first: int = 0, y: int = d.ROW_Y,
               rows: int = d.ROWS_ABOVE_HINT, cursor: int | None = None, right_of=None) -> None:
    """Rows of name + score (for games without their own layout), on the grid's pitch."""
    for i in range(rows):
        seat = first + i
        if seat >= len(players):
            break
        right = d.number(scores[seat]) if right_of is None else right_of(seat)
        c.row(y + i * d.PITCH, short_name(players[seat], players, 80), seat == cursor, right=right)
