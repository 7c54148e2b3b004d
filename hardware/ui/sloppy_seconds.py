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
from .base import REVEAL_S, Controller, UndoStep, center_named, hint_line, lead_marker, legend_header
from .number_entry import Stepper

SUITS = "SHDC"
SYMBOLS = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}
SUIT_POINTS = 91


def suit_total(suit: str, seats: int) -> int:
    """What a suit's totals add up to: 91, or 89 for diamonds with 3 players (no 2D)."""
    return SUIT_POINTS - 2 if seats == 3 and suit == "D" else SUIT_POINTS


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

    def _seat_rows(self, c: Canvas, p: dict, right_of, lead: int | None = None) -> None:
        step = 10 if len(p["players"]) <= 4 else 8
        for seat, name in enumerate(p["players"]):
            y = 13 + seat * step
            if seat == lead:
                lead_marker(c, 0, y + 3)
            width = c.text_fit(5, y, name, 80, d.SMALL)
            if seat == p["dealer"]:
                c.fill(5 + width + 3, y + 2, 5 + width + 11, y + 10)
                c.text(5 + width + 4, y + 1, _("D"), d.SMALL, fill=d.OFF)
            right = right_of(seat)
            if isinstance(right, tuple):          # (hand points, total)
                c.right(92, y, right[0], d.SMALL)
                right = right[1]
            c.right(d.WIDTH - 1, y - 1, right, d.STRONG)

    def _draw_table(self, c: Canvas, p: dict) -> None:
        if self._trump_text(p) or p["lead"] is None:
            c.header(_("Hand {h}", h=len(p["hands"]) + 1), self._trump_text(p))
        else:
            legend_header(c, _("Hand {h}", h=len(p["hands"]) + 1), _("leads"))
        self._seat_rows(c, p, lambda s: d.number(p["scores"][s]), p["lead"])
        hint_line(c, _("OK: enter · BACK: menu") if not p["tricks_played"] else _("Tricks: on a phone"))

    def _draw_last(self, c: Canvas, p: dict, title: str | None = None) -> None:
        points = p["hands"][-1]["points"]
        c.header(title or _("Last hand ({h})", h=len(p["hands"])), _("total"))
        self._seat_rows(c, p, lambda s: (d.signed(points[s]), d.number(p["scores"][s])))
        hint_line(c, _("OK or BACK: back") if self.mode == "last" else _("OK: go on · BACK: menu"))

    def _draw_hand_end(self, c: Canvas, p: dict) -> None:
        self._draw_last(c, p, _("Hand {h} scored", h=len(p["hands"])))

    def _suit_rows(self, c: Canvas, values: list[int], right_of, cursor: int | None) -> None:
        for k, suit in enumerate(SUITS):
            y = 13 + k * 10
            fg = d.ON
            if k == cursor:
                c.fill(0, y, d.WIDTH - 1, y + 9)
                fg = d.OFF
            c.text(2, y, SYMBOLS[suit], d.SMALL, fill=fg)
            c.text(16, y - 1, str(values[k]), d.STRONG, fill=fg)
            c.right(d.WIDTH - 3, y, right_of(k), d.SMALL, fill=fg)

    def _draw_entry(self, c: Canvas, p: dict) -> None:
        seat = self.seat
        values = [self.field.value if k == self.suit else self.totals[seat][k] if (seat, k) in self.entered else None
                  for k in range(len(SUITS))]
        c.header(_("{name}'s tricks", name=p["players"][seat]), self.field.label())

        def left(k: int) -> str:
            return "" if values[k] is None else _("{n} left", n=self._left(k, seat) - values[k])
        self._suit_rows(c, ["" if v is None else v for v in values], left, self.suit)
        hint_line(c, _("OK: next · BACK: back"))

    def _draw_confirm(self, c: Canvas, p: dict) -> None:
        last = self._n() - 1
        c.header(_("{name}: the rest", name=p["players"][last]))
        self._suit_rows(c, self._rest(), lambda k: _("of {n}", n=suit_total(SUITS[k], self._n())), None)
        hint_line(c, _("OK: score · BACK: fix"))

    def _draw_game_end(self, c: Canvas, p: dict) -> None:
        c.header(_("Game over"), _("target {t}", t=p.get("target", "")) if p.get("target") else "")
        winner = p["winner"][0]
        center_named(c, 13, lambda n: _("{name} wins!", name=n), p["players"][winner])
        others = [f"{n} {d.number(s)}" for n, s in zip(p["players"], p["scores"])]
        for i, text in enumerate(others):
            x, y = (i % 2) * 65, 30 + (i // 2) * 11
            c.text_fit(x, y, text, 62, d.STRONG if i == winner else d.BODY)
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
