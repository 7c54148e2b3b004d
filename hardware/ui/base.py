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

To plug in a new game: subclass :class:`Controller`, set ``game_id``, and add
the class to ``hardware.ui.CONTROLLERS``.  Games without one get the generic
screen (public scores only).
"""

from __future__ import annotations

from companion.i18n import _

from .. import draw as d
from ..draw import Canvas

REVEAL_S = 15.0      # a reveal / round result stays this long unless a button dismisses it


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


# -- shared drawing --------------------------------------------------------------

def lead_marker(c: Canvas, x: int, y: int, fill=d.ON) -> None:
    """A small right-pointing triangle (who leads)."""
    c.draw.polygon([(x, y), (x, y + 6), (x + 3, y + 3)], fill=fill, outline=fill)


def pass_screen(c: Canvas, header: str, header_right: str, done: list[str], name: str) -> None:
    """The shared screen between two secret entries: who has locked (names
    only, never a value), and whom to pass the box to.  It shows nothing that
    depends on any seat's pick.  On the web mirror (``c.mirror``) it stands
    for the whole secret entry: "<name> is choosing…", no prompt to press OK."""
    c.header(header, header_right)
    if done:
        c.center(15, "  ".join(f"{n} \u2713" for n in done), d.STRONG, 0, d.WIDTH)
    font = d.largest_fitting(name, d.WIDTH - 4, (d.BIG, d.TITLE, d.STRONG))
    if getattr(c, "mirror", False):
        c.center(27, name, font)
        c.center(50, _("is choosing\u2026"), d.SMALL)
        return
    c.center(29, _("Pass the box to"), d.SMALL)
    c.center(41, name, font)
    c.right(d.WIDTH - 1, d.HEIGHT - 10, _("OK \u25b8"), d.SMALL)


def token_grid(c: Canvas, y: int, players: list[str], tokens: list[int], highlight: int | None = None) -> None:
    """Names with their tokens as dots, two per line (four seats)."""
    for seat, name in enumerate(players[:4]):
        x = (seat % 2) * 65
        row_y = y + (seat // 2) * 12
        dots = min(tokens[seat], 4) * 5 + 2 if tokens[seat] else 0
        font = d.STRONG if seat == highlight else d.BODY
        width = c.text_fit(x, row_y, name, 62 - dots, font)
        c.dots(x + width + 3, row_y + 4, tokens[seat], limit=4)


def result_screen(c: Canvas, header: str, right: str, headline: str, players: list[str], tokens: list[int],
                  highlight: int | None) -> None:
    """The end of a round or match: a headline, then everyone's tokens."""
    c.header(header, right)
    c.center(16, headline, d.largest_fitting(headline, d.WIDTH - 2, (d.BIG, d.TITLE, d.STRONG)))
    token_grid(c, 39, players, tokens, highlight)


def score_rows(c: Canvas, players: list[str], scores: list[int], first: int = 0, y: int = 14,
               rows: int = 4, cursor: int | None = None, right_of=None) -> None:
    """Rows of name + score (for games without their own layout)."""
    for i in range(rows):
        seat = first + i
        if seat >= len(players):
            break
        right = d.number(scores[seat]) if right_of is None else right_of(seat)
        c.row(y + i * 12, players[seat], seat == cursor, height=12, right=right)
