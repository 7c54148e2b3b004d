"""Sloppy Seconds on the box: game totals, trump, and a hand by suit totals.

Screens (``self.mode``):

``table``     the game: every seat's total, a "D" at the dealer, a triangle at
              the seat that leads the next trick; the header names the hand
              and, once a phone's trick entry has broken suits, the trump and
              the suit that can never be trump ("not ♣ · trump ♥"), all hand
              long.  OK → ``entry``; UP/DOWN → ``last`` (the last hand).
``entry``     the hand's suit totals, one page per seat (its four suits as
              rows) but the last seat: each value starts at the fair share of
              what is left of that suit and is entered ±5 then ±1 (see
              :mod:`.number_entry`), never above what is left; every row shows
              what is still left of its suit for the seats after.  BACK steps
              back a field (the draft is kept until the hand is scored).
``confirm``   the last seat's page, computed from the suit totals (91; 89
              for diamonds with three players): the sum check, visible.  OK
              scores the hand.
``last``      the last hand's points; any button returns.
``hand_end``  the hand's points and the new totals (any button or REVEAL_S;
              BACK opens the menu over the table).
``game_end``  the winner and everyone's total; OK or BACK opens the menu.

Each screen ends with a hint line saying what OK and BACK do.

Presses per hand: 1 (OK to start) + for each of the 4 × (seats − 1) values
coarse moves + OK + fine moves + OK, + 1 (confirm): about 45 with three
players and 67 with four, for real deals (against 100 and 150 with steps of 1).
"""

from __future__ import annotations

from companion.i18n import N_, _

from .. import draw as d
from ..draw import Canvas
from .base import REVEAL_S, Controller, UndoStep, center_named, hint_line, lead_marker, legend_header, short_name
from .number_entry import Stepper

SUITS = "SHDC"
SYMBOLS = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}
SUIT_POINTS = 91


def suit_total(suit: str, seats: int) -> int:
    """What a suit's totals add up to: 91, or 89 for diamonds with 3 players (no 2D)."""
    return SUIT_POINTS - 2 if seats == 3 and suit == "D" else SUIT_POINTS


# The grid's three rows under the header (14, 27, 40) and its two columns
# (cells of 60 px, a rule between them): three seats take a row each, four
# take two seats a row, so that every total is on the screen at once.
ROWS = [d.ROW_Y + i * d.PITCH for i in range(d.ROWS_ABOVE_HINT)]
COLUMNS = [(d.MARGIN, 60), (67, d.WIDTH - d.MARGIN - 1)]   # inclusive x ranges
SEPARATOR_X = 63


def separator(c: Canvas, rows: int) -> None:
    """The dotted rule between the two columns, down ``rows`` rows."""
    top, bottom = d.ROW_Y, d.ROW_Y + rows * d.PITCH - 2
    c.shape((SEPARATOR_X, top, SEPARATOR_X + 1, bottom + 1),
            lambda draw: [draw.point((SEPARATOR_X, y), fill=d.ON) for y in range(top + 1, bottom + 1, 2)])


def cells(n: int) -> list[tuple[int, int, int]]:
    """(x0, x1, y) of each of ``n`` places: a full row each for three or
    fewer, else two a row."""
    if n <= len(ROWS):
        return [(d.MARGIN, d.WIDTH - d.MARGIN - 1, ROWS[i]) for i in range(n)]
    return [(*COLUMNS[i % 2], ROWS[i // 2]) for i in range(n)]


def dealer_mark(c: Canvas, x: int, y: int) -> int:
    """The dealer's "D", inverted in a box that keeps a lit pixel round its
    letter; ``y`` is the line's top.  Returns the width it takes."""
    label = _("D")
    box = d.ink_box(label, d.BODY)
    w = box[2] - box[0]
    c.fill(x, y + d.BASELINE + box[1] - 1, x + w + 1, y + d.BASELINE + box[3])
    c.text(x + 1 - box[0], y, label, d.BODY, fill=d.OFF)
    return w + 2


def _target_choices(players):
    return [(t, str(t)) for t in (300, 364, 200, 100)]


def _dealer_choices(players):
    return [(seat, name) for seat, name in enumerate(players)]


class SloppySecondsController(Controller):
    game_id = "sloppy-seconds"
    OPTIONS = [
        {"key": "target", "label": N_("Target"), "choices": _target_choices, "default": lambda players: 300},
        {"key": "first_dealer", "label": N_("First dealer"), "choices": _dealer_choices,
         "default": lambda players: 0},
    ]

    def __init__(self, app):
        super().__init__(app)
        self.mode = "table"
        self._clear_draft()

    def _clear_draft(self) -> None:
        self.totals: list[list[int]] | None = None      # per seat, per suit
        self.entered: set[tuple[int, int]] = set()      # (seat, suit) fields already entered
        self.seat = self.suit = 0
        self.field: Stepper | None = None

    # -- following the state ---------------------------------------------------
    def sync(self, public, change) -> None:
        previous, self.public = self.public, public
        if change is not None and change.kind not in ("action", "undo", "new_game", "resume"):
            return
        if len(public["hands"]) != len(previous.get("hands", public["hands"])):
            self._clear_draft()            # a hand was scored (or undone): the draft is stale
            if change is not None and change.kind == "action" and not public["finished"]:
                self.mode = "hand_end"
                self.app.set_timer("sloppy-seconds", REVEAL_S, self._derive)
                self.app.chirp(1)
                return
        self._derive()

    def _derive(self) -> None:
        self.app.cancel_timer("sloppy-seconds")
        if self.public["finished"]:
            self.mode = "game_end"
        elif self.mode not in ("entry", "confirm") or self.totals is None or self.public["tricks_played"]:
            self.mode = "table"

    # -- the draft -------------------------------------------------------------
    def _n(self) -> int:
        return len(self.public["players"])

    def _left(self, suit: int, upto: int) -> int:
        """What is left of ``suit`` for the seats from ``upto`` on."""
        return suit_total(SUITS[suit], self._n()) - sum(self.totals[s][suit] for s in range(upto))

    def _open(self, seat: int, suit: int, fine: bool = False) -> None:
        """Put the cursor on a field: its draft value, or the fair share of what is left."""
        self.seat, self.suit = seat, suit
        left = self._left(suit, seat)
        value = self.totals[seat][suit] if (seat, suit) in self.entered else round(left / (self._n() - seat))
        self.field = Stepper(value, 0, max(0, left))
        self.field.fine = fine or self.field.fine
        self.mode = "entry"

    def _start(self) -> None:
        if self.public["tricks_played"]:
            self.app.show_message(_("This hand is entered trick by trick on a phone ({n} so far).",
                                    n=self.public["tricks_played"]))
            return
        if self.totals is None:
            self.totals = [[0] * len(SUITS) for _seat in range(self._n())]
            self.entered = set()
            self._open(0, 0)
        else:
            self._open(self.seat, self.suit)          # back to where the draft was left

    def _next(self) -> None:
        self.totals[self.seat][self.suit] = self.field.value
        self.entered.add((self.seat, self.suit))
        if self.suit + 1 < len(SUITS):
            self._open(self.seat, self.suit + 1)
        elif self.seat + 2 < self._n():
            self._open(self.seat + 1, 0)
        else:
            self.mode = "confirm"

    def _previous(self) -> None:
        if self.suit > 0:
            self._open(self.seat, self.suit - 1, fine=True)
        elif self.seat > 0:
            self._open(self.seat - 1, len(SUITS) - 1, fine=True)
        else:
            self.mode = "table"                       # the draft stays

    def _rest(self) -> list[int]:
        """The last seat's totals: what is left of each suit."""
        return [self._left(k, self._n() - 1) for k in range(len(SUITS))]

    def _score(self) -> None:
        rest = self._rest()
        short = [SYMBOLS[SUITS[k]] for k, v in enumerate(rest) if v < 0]
        if short:
            self.app.show_message(_("The {suits} totals add up to more than the suit: go back and fix them.",
                                    suits=" ".join(short)))
            return
        rows = [dict(zip(SUITS, self.totals[s])) for s in range(self._n() - 1)] + [dict(zip(SUITS, rest))]
        self.app.submit({"type": "hand", "points": rows})

    # -- buttons ----------------------------------------------------------------
    def key(self, name: str) -> bool:
        if self.mode in ("hand_end", "last"):
            back_to_menu = name == "back" and self.mode == "hand_end"     # a look at the last hand just closes
            self.mode = "table"
            self._derive()
            return not (back_to_menu and self.mode == "table")
        if self.mode == "game_end":
            if name == "ok":
                self.app.open_menu()
                return True
            return False
        if self.mode == "table":
            if name == "ok":
                self._start()
                return True
            if name in ("up", "down") and self.public["hands"]:
                self.mode = "last"
                return True
            return False
        if self.mode == "confirm":
            if name == "ok":
                self._score()
            elif name == "back":
                self._open(self._n() - 2, len(SUITS) - 1, fine=True)
            return True
        # entry
        if name in ("up", "down"):
            self.field.move(name)
        elif name == "ok":
            if self.field.ok():
                self._next()
        elif name == "back" and not self.field.back():
            self._previous()
        return True

    # -- screens ---------------------------------------------------------------
    def draw(self, c: Canvas, p: dict) -> None:
        getattr(self, f"_draw_{self.mode}")(c, p)

    def _trump_text(self, p: dict) -> str:
        parts = []
        if p["ineligible"]:
            parts.append(_("not {suit}", suit=SYMBOLS[p["ineligible"]]))
        if p["trump"]:
            parts.append(_("trump {suit}", suit=SYMBOLS[p["trump"]]))
        return " · ".join(parts)

    def _seat_rows(self, c: Canvas, p: dict, right_of, lead: int | None = None, dealer: bool = True) -> None:
        """Every seat at once (:func:`cells`): ▶ at the lead, the name, "D" at
        the dealer, and ``right_of(seat)`` (a total, or (hand points,
        total)) right-aligned; the name gives way, abbreviated distinctly."""
        players = p["players"]
        places = cells(len(players))
        if len(players) > len(ROWS):
            separator(c, (len(players) + 1) // 2)
        for seat, (x0, x1, y) in enumerate(places):
            x = x0 + 1
            if seat == lead:
                lead_marker(c, x, y + 3)
            x += d.icon_width("play") + 1
            end = x1 + 1
            right = right_of(seat)
            if isinstance(right, tuple):          # (hand points, total)
                total_w = max(d.text_width(right_of(s)[1], d.STRONG) for s in range(len(players)))
                c.right(end, y, right[1], d.STRONG)
                end -= max(total_w, d.text_width("000", d.STRONG)) + 3
                right = right[0]
                font = d.BODY
            else:
                font = d.STRONG
            end -= c.right(end, y, right, font) + 3
            mark = dealer and seat == p["dealer"]
            room = end - x - (d.text_width(_("D"), d.BODY) + 5 if mark else 0)
            width = c.text(x, y, short_name(players[seat], players, room), d.BODY)
            if mark:
                dealer_mark(c, x + width + 2, y)

    def _draw_table(self, c: Canvas, p: dict) -> None:
        if self._trump_text(p) or p["lead"] is None:
            c.header(_("Hand {h}", h=len(p["hands"]) + 1), self._trump_text(p))
        else:
            legend_header(c, _("Hand {h}", h=len(p["hands"]) + 1), _("leads"))
        self._seat_rows(c, p, lambda s: d.number(p["scores"][s]), p["lead"])
        hint_line(c, _("OK: enter · BACK: menu") if not p["tricks_played"] else _("Tricks: on a phone"))

    def _draw_last(self, c: Canvas, p: dict, title: str | None = None) -> None:
        points = p["hands"][-1]["points"]
        title = title or _("Last hand ({h})", h=len(p["hands"]))
        if len(p["players"]) <= len(ROWS):
            c.header(title, _("total"))
            self._seat_rows(c, p, lambda s: (d.signed(points[s]), d.number(p["scores"][s])), dealer=False)
        else:
            # Four seats, two a row: the hand's points only (the totals are
            # the table's, the screen after), so that every name stays readable.
            c.header(title)
            self._seat_rows(c, p, lambda s: d.signed(points[s]), dealer=False)
        hint_line(c, _("OK or BACK: back") if self.mode == "last" else _("OK: go on · BACK: menu"))

    def _draw_hand_end(self, c: Canvas, p: dict) -> None:
        self._draw_last(c, p, _("Hand {h} scored", h=len(p["hands"])))

    def _suit_rows(self, c: Canvas, values: list, right_of, cursor: int | None) -> None:
        """The four suits two a row ("♠ 23"), the cursor's on a bar that keeps
        a lit row and column round its letters; ``right_of(k)`` at the cell's
        right end."""
        separator(c, 2)
        for k, suit in enumerate(SUITS):
            x0, x1 = COLUMNS[k % 2]
            y = ROWS[k // 2]
            fg = d.ON
            if k == cursor:
                c.fill(x0, y - 1, x1, y + d.LINE, d.ON)
                fg = d.OFF
            width = c.text(x0 + 2, y, SYMBOLS[suit], d.BODY, fill=fg)
            c.text(x0 + 2 + width + 3, y, str(values[k]), d.STRONG, fill=fg)
            right = right_of(k)
            if right:
                c.right(x1, y, right, d.BODY, fill=fg)

    def _draw_entry(self, c: Canvas, p: dict) -> None:
        seat = self.seat
        values = [self.field.value if k == self.suit else self.totals[seat][k] if (seat, k) in self.entered else None
                  for k in range(len(SUITS))]
        title = _("{name}'s tricks", name=p["players"][seat])
        room = d.WIDTH - 2 * d.MARGIN - d.text_width(self.field.label(), d.SMALL) - 2
        if d.text_width(title, d.SMALL) > room:
            name = p["players"][seat]
            name = short_name(name, p["players"], room - d.text_width(title, d.SMALL) + d.text_width(name, d.SMALL),
                              d.SMALL)
            title = _("{name}'s tricks", name=name)
        c.header(title, self.field.label())

        self._suit_rows(c, ["" if v is None else v for v in values], lambda k: "", self.suit)
        # What is left of the suit under the cursor for the seats after.
        left = self._left(self.suit, seat) - self.field.value
        c.center(ROWS[2], f"{SYMBOLS[SUITS[self.suit]]} " + _("{n} left", n=left), d.BODY)
        hint_line(c, _("OK: next · BACK: back"))

    def _draw_confirm(self, c: Canvas, p: dict) -> None:
        last = self._n() - 1
        title = _("{name}: the rest", name=p["players"][last])
        if d.text_width(title, d.SMALL) > d.WIDTH - 2 * d.MARGIN:
            name = p["players"][last]
            room = d.WIDTH - 2 * d.MARGIN - d.text_width(title, d.SMALL) + d.text_width(name, d.SMALL)
            title = _("{name}: the rest", name=short_name(name, p["players"], room, d.SMALL))
        c.header(title)
        self._suit_rows(c, self._rest(), lambda k: _("of {n}", n=suit_total(SUITS[k], self._n())), None)
        hint_line(c, _("OK: score · BACK: fix"))

    def _draw_game_end(self, c: Canvas, p: dict) -> None:
        c.header(_("Game over"), _("target {t}", t=p.get("target", "")) if p.get("target") else "")
        winner = p["winner"][0]
        players = p["players"]
        center_named(c, ROWS[0], lambda n: _("{name} wins!", name=n), players[winner], fonts=(d.STRONG,),
                     others=players)
        # Everyone's total, two a row under the headline.
        separator_rows = (len(players) + 1) // 2
        c.shape((SEPARATOR_X, ROWS[1], SEPARATOR_X + 1, ROWS[1] + separator_rows * d.PITCH - 1),
                lambda draw: [draw.point((SEPARATOR_X, y), fill=d.ON)
                              for y in range(ROWS[1] + 1, ROWS[1] + separator_rows * d.PITCH - 1, 2)])
        for seat, (x0, x1) in enumerate((COLUMNS[i % 2] for i in range(len(players)))):
            y = ROWS[1 + seat // 2]
            font = d.STRONG if seat == winner else d.BODY
            end = x1 + 1 - c.right(x1 + 1, y, d.number(p["scores"][seat]), font) - 3
            c.text(x0 + 1, y, short_name(players[seat], players, end - x0 - 1, font), font)
        hint_line(c, _("OK or BACK: menu"))

    def describe_undo(self, step: UndoStep) -> str:
        return describe_undo(step)


def describe_undo(step: UndoStep) -> str:
    """A hand's points ("hand 3's points") or a trick entered on a phone."""
    h = len(step.before.get("hands") or []) + 1
    if step.action.get("type") == "hand":
        return _("the points of hand {h}", h=h)
    if step.action.get("type") == "trick":
        return _("the last trick of hand {h}", h=h)
    return ""
