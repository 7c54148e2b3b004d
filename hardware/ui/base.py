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
    """A small right-pointing triangle (who leads)."""
    c.draw.polygon([(x, y), (x, y + 6), (x + 3, y + 3)], fill=fill, outline=fill)


def center_named(c: Canvas, y: int, make, name: str, fonts=(d.TITLE, d.STRONG), width: int = d.WIDTH - 2) -> None:
    """Centre ``make(name)`` ("Token for Élodie") on one line: in the largest
    of ``fonts`` where it fits, else in the last with the *name* shortened
    (…), so that the words around it are always read whole."""
    text = make(name)
    font = d.largest_fitting(text, width, fonts)
    if d.text_width(text, font) > width:
        room = width - d.text_width(text, font) + d.text_width(name, font)
        text = make(d.fit(name, font, max(room, 0)))
    c.center(y, text, font)


def legend_header(c: Canvas, title: str, word: str, short: str | None = None) -> None:
    """A header whose right end explains the triangle on the rows ("▶
    leads").  Title and legend in the small font, or both a pixel smaller
    when a language needs the room; if even that is too wide ("Manche 10 ·
    coup 9  ▶ entame"), the ``short`` title ("M10 · coup 9"): the legend is
    the one thing the screen must not lose."""
    fits = None
    for text in (title, short or title):
        for font in (d.SMALL, HINT_FONT):
            legend = d.text_width(word, font) + 6          # the triangle, a gap, the word
            if d.text_width(text, font) + legend + 3 <= d.WIDTH:
                fits = text, font, legend
                break
        if fits:
            break
    title, font, legend = fits or (short or title, HINT_FONT, d.text_width(word, HINT_FONT) + 6)
    y = d.SMALL.size - font.size                       # the same baseline in either font
    c.text_fit(0, y, title, d.WIDTH - legend - 3, font)
    lead_marker(c, d.WIDTH - legend, 2)
    c.right(d.WIDTH - 1, y, word, font)
    c.hline(0, d.WIDTH - 1, 12)


def pass_screen(c: Canvas, header: str, header_right: str, done: list[str], name: str, hint: str = "") -> None:
    """The shared screen between two secret entries: who has locked (names
    only, never a value), and whom to pass the box to; ``hint`` says what
    OK and BACK do (OK: that seat has the box).  It shows nothing that
    depends on any seat's pick.  On the web mirror (``c.mirror``) it stands
    for the whole secret entry: "<name> is choosing…", no prompt to press OK."""
    c.header(header, header_right)
    if done:
        c.center(14, "  ".join(f"{n} \u2713" for n in done), d.STRONG, 0, d.WIDTH)
    font = d.largest_fitting(name, d.WIDTH - 4, (d.BIG, d.TITLE, d.STRONG))
    if getattr(c, "mirror", False):
        c.center(27, name, font)
        c.center(50, _("is choosing\u2026"), d.SMALL)
        return
    c.center(26, _("Pass the box to"), d.SMALL)
    c.center(36, name, font)
    hint_line(c, hint or _("OK: ready"))


def hint_line(c: Canvas, text: str) -> None:
    """The bottom line saying what the buttons do next ("OK: next bid ·
    BACK: menu"), on a cleared band so that it stays readable over whatever
    the screen drew above it.  In the small font, or a pixel smaller when a
    language needs more room (French "OK : suite · BACK : retour")."""
    c.fill(0, HINT_Y + 1, d.WIDTH - 1, d.HEIGHT - 1, d.OFF)
    if d.text_width(text, HINT_FONT) > d.WIDTH:
        # French sets a space before its colons ("OK : suite"): on 128 pixels
        # the hint keeps its words and gives up those spaces first.
        text = text.replace(" :", ":")
    font = d.largest_fitting(text, d.WIDTH, (d.SMALL, HINT_FONT))
    c.center(HINT_Y + (d.SMALL.size - font.size), text, font)


HINT_Y = d.HEIGHT - 10      # the hint line's top: its capitals take the last 8 rows
# 9 px DejaVu, only for hint lines that do not fit in SMALL: still readable
# on one line of short words, and the whole hint stays on the screen.
HINT_FONT = d._font(d.REGULAR, 9)     # the same layout engine as every other text (draw.LAYOUT)


def scroll_mark(c: Canvas, x: int, y: int, up: bool, fill=d.ON) -> None:
    """A small triangle, 5 px wide and 3 high from ``y``, pointing up (more
    rows above: UP shows them) or down (more below): drawn at the right end
    of the first or last row shown when the seats do not all fit above the
    hint line."""
    tip, base = (y, y + 2) if up else (y + 2, y)
    c.draw.polygon([(x, base), (x + 4, base), (x + 2, tip)], fill=fill, outline=fill)


def score_rows(c: Canvas, players: list[str], scores: list[int], first: int = 0, y: int = 14,
               rows: int = 4, cursor: int | None = None, right_of=None) -> None:
    """Rows of name + score (for games without their own layout)."""
    for i in range(rows):
        seat = first + i
        if seat >= len(players):
            break
        right = d.number(scores[seat]) if right_of is None else right_of(seat)
        c.row(y + i * 12, players[seat], seat == cursor, height=12, right=right)
