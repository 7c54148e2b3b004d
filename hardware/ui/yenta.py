"""Yenta on the box: the bid, asks and passes, the last player's dice.

Screens (``self.mode``), re-derived from the public state after a change:

``bid``       who won the auction and for how much: the seat (UP/DOWN, OK; it
              starts on the last hand's bidder) then the amount, ±5 then ±1
              from the last bid (see :mod:`.number_entry`).
``turn``      the table: one row per seat with its dice (dots), hand points
              and total (Σ), a triangle at the seat that asks; the header names
              the bid.  The cursor picks whom the asker asks (it starts on the next
              seat with dice) or, past the last seat, *pass* (in the header).
              OK on a seat → ``value``; OK on *pass* passes.
``value``     the value asked, 1..6 (wrapping; it starts on the last value asked).
``hit``       "Hit" or "Miss" (starts on Hit); OK enters the ask.
``last``      the last seat with dice shows them: one value per die (each
              starts on the one before), OK after the last die settles the hand.
``hand_end``  the bid made or lost, everyone's hand points and totals.
``game_end``  the winner and the totals; OK or BACK opens the menu.

Each screen ends with a hint line saying what OK and BACK do.  Three seat
rows fit between the header and it.  The turn shows the asker on the first
row (the table must always see whose turn it is), then the seat the cursor
is on and the one after it in turn order: the cursor goes through the seats
in that order, and its bar stays on the second row (on the third its lit
bottom row would touch the hint's capitals).  *pass* is at the header's
right end.  Results show up to four seats a column each (name, change,
total); five or six seats go a row each and scroll with UP/DOWN.  ▲/▼ in
the header say that more seats are above or below.

BACK steps back (``value`` → ``turn``, ``hit`` → ``value``, a die → the
one before); on ``turn`` and the first field of ``bid`` it opens the menu.

Presses: a bid, seat moves + OK + coarse moves + OK + fine moves + OK; an
ask, target moves + OK + value moves (0..3) + OK + (1 for a miss) + OK, so 3
at least; a pass, moves to *pass* + OK; the last dice, one OK per die + the
moves (0..3 each).
"""

from __future__ import annotations

from companion.i18n import N_, _

from .. import draw as d
from ..draw import Canvas
from .base import REVEAL_S, Controller, UndoStep, hint_line
from .number_entry import Stepper
from .seat_grid import columns, distinct_names, name_columns, named_header

DICE = 5
PASS = "pass"
ROWS = d.ROWS_ABOVE_HINT    # seat rows between the header and the hint line
COLUMNS = 4                 # a result shows up to four seats a column each
# A seat's row: ▶, the name, five dice (tokens), the hand's points (right
# edge POINTS_R), the total (Σ, at the right end).
NAME_X, NAME_W = 7, 46
DICE_X = 56
POINTS_R = 100
MAX_BID = 999


def _target_choices(players):
    return [(t, str(t)) for t in (100, 50, 150, 200)]


class YentaController(Controller):
    game_id = "yenta"
    OPTIONS = [{"key": "target", "label": N_("Target"), "choices": _target_choices, "default": lambda players: 100}]

    def __init__(self, app):
        super().__init__(app)
        self.mode = "bid"
        self.cursor = 0                 # bid: the seat; turn: the target or PASS
        self.amount: Stepper | None = None
        self.value = 1                  # the value asked (kept from one ask to the next)
        self.hit = True
        self.dice: list[int] = []       # last: the values entered so far
        self.last_bidder = 0
        self.last_bid = 20
        self.top: int | None = None     # hand_end/game_end: the first row shown, once scrolled

    # -- following the state ---------------------------------------------------
    def sync(self, public, change) -> None:
        previous, self.public = self.public, public
        self.top = None                 # a result screen opens on its bidder or winner
        if change is not None and change.kind not in ("action", "undo", "new_game", "resume"):
            return
        if public["hands"]:
            self.last_bidder, self.last_bid = public["hands"][-1]["bidder"], public["hands"][-1]["bid"]
        settled = len(public["hands"]) > len(previous.get("hands", public["hands"]))
        if change is not None and change.kind == "action" and settled and not public["finished"]:
            self.mode = "hand_end"
            self.app.set_timer("yenta", REVEAL_S, self._derive)
            self.app.chirp(1)
            return
        self._derive()

    def _derive(self) -> None:
        self.app.cancel_timer("yenta")
        p = self.public
        if p["finished"]:
            self.mode = "game_end"
        elif p["bidder"] is None:
            if self.mode != "bid":
                self.cursor, self.amount = self.last_bidder, None
            self.mode = "bid"
        elif sum(1 for n in p["dice"] if n) == 1:
            if self.mode != "last":
                self.dice = []
            self.mode = "last"
        else:
            self.mode = "turn"
            self.cursor = self._targets()[0]

    def _targets(self) -> list:
        """Whom the asker may ask, from the next seat on, then PASS."""
        p = self.public
        n = len(p["players"])
        seats = [(p["turn"] + k) % n for k in range(1, n)]
        return [s for s in seats if p["dice"][s]] + [PASS]

    # -- buttons ----------------------------------------------------------------
    def key(self, name: str) -> bool:
        p = self.public
        if self.mode in ("hand_end", "game_end") and name in ("up", "down") and len(p["players"]) > COLUMNS:
            # The seats that do not fit: a press shows the next one and keeps
            # the hand's result up for another REVEAL_S.
            first = self._first(len(p["players"]), self._result_focus(p))
            self.top = max(0, min(first + (1 if name == "down" else -1), len(p["players"]) - ROWS))
            if self.mode == "hand_end":
                self.app.set_timer("yenta", REVEAL_S, self._derive)
            return True
        if self.mode == "hand_end":
            self._derive()
            return name != "back"          # BACK: on, to the menu
        if self.mode == "game_end":
            if name == "ok":
                self.app.open_menu()
                return True
            return False
        return getattr(self, f"_key_{self.mode}")(name, p)

    def _key_bid(self, name: str, p: dict) -> bool:
        if self.amount is None:                     # the seat
            if name in ("up", "down"):
                self.cursor = (self.cursor + (1 if name == "down" else -1)) % len(p["players"])
            elif name == "ok":
                self.amount = Stepper(self.last_bid, 0, MAX_BID)
            else:
                return False
            return True
        if name in ("up", "down"):
            self.amount.move(name)
        elif name == "ok":
            if self.amount.ok():
                self.app.submit({"type": "bid", "seat": self.cursor, "amount": self.amount.value})
        elif name == "back" and not self.amount.back():
            self.amount = None
        return True

    def _key_turn(self, name: str, p: dict) -> bool:
        targets = self._targets()
        if name in ("up", "down"):
            i = targets.index(self.cursor) if self.cursor in targets else 0
            self.cursor = targets[(i + (1 if name == "down" else -1)) % len(targets)]
        elif name == "ok":
            if self.cursor == PASS:
                self.app.submit({"type": "pass", "seat": p["turn"]})
            else:
                self.mode = "value"
        else:
            return False
        return True

    def _key_value(self, name: str, p: dict) -> bool:
        if name in ("up", "down"):
            self.value = (self.value - 1 + (1 if name == "up" else -1)) % 6 + 1
        elif name == "ok":
            self.mode, self.hit = "hit", True
        elif name == "back":
            self.mode = "turn"
        return True

    def _key_hit(self, name: str, p: dict) -> bool:
        if name in ("up", "down"):
            self.hit = not self.hit
        elif name == "ok":
            action = {"type": "ask", "seat": p["turn"], "target": self.cursor, "value": self.value, "hit": self.hit}
            if not self.app.submit(action):
                self.mode = "turn"
        elif name == "back":
            self.mode = "value"
        return True

    def _key_last(self, name: str, p: dict) -> bool:
        seat = p["turn"]
        if not self.dice:
            self.dice = [1]
        if name in ("up", "down"):
            self.dice[-1] = (self.dice[-1] - 1 + (1 if name == "up" else -1)) % 6 + 1
        elif name == "ok":
            if len(self.dice) < p["dice"][seat]:
                self.dice.append(self.dice[-1])
            else:
                dice, self.dice = self.dice, []
                if not self.app.submit({"type": "last", "seat": seat, "dice": dice}):
                    self.dice = dice
        elif name == "back":
            if len(self.dice) <= 1:
                self.dice = []
                return False
            self.dice.pop()
        return True

    # -- screens ---------------------------------------------------------------
    def draw(self, c: Canvas, p: dict) -> None:
        getattr(self, f"_draw_{self.mode}")(c, p)

    def _first(self, n: int, marked: int | None) -> int:
        """A result's first row: where UP/DOWN scrolled it to, else the one
        that keeps the marked seat in sight."""
        if n <= ROWS:
            return 0
        if self.top is not None and self.mode in ("hand_end", "game_end"):
            return self.top
        return max(0, min(marked - 1, n - ROWS)) if isinstance(marked, int) else 0

    def _shown(self, n: int, marked: int | None, cursor=None) -> tuple[list[int], bool, bool]:
        """The seats on the rows, and whether seats are out of sight above
        and below.  On the turn (a ``cursor``): the asker (``marked``), the
        seat the cursor is on and the one after it in turn order; on *pass*
        the two seats after the asker.  The cursor's bar is thus always on
        the second row: on the third its lit bottom row would touch the
        hint line's capitals."""
        if isinstance(marked, int) and cursor is not None:
            others = [(marked + k) % n for k in range(1, n)]
            start = others.index(cursor) if cursor in others else 0
            shown = others[start:start + ROWS - 1]
            return [marked] + shown, start > 0, start + len(shown) < len(others)
        first = self._first(n, marked)
        last = min(n, first + ROWS)
        return list(range(first, last)), first > 0, last < n

    def _result_focus(self, p: dict) -> int:
        """The seat a result screen marks (and opens on): the winner, or the hand's bidder."""
        return p["winner"][0] if self.mode == "game_end" else p["hands"][-1]["bidder"]

    def _rows(self, c: Canvas, p: dict, points, marked: int | None, cursor=None, dice: bool = True) -> None:
        """Seats as rows on the grid's pitch: ▶ (``marked``), name, dice
        (dots), ``points`` and the total; ROWS at most (see :meth:`_shown`)."""
        seats, _, _ = self._shown(len(p["players"]), marked, cursor)
        names = distinct_names(p["players"], NAME_W, d.BODY)
        for i, seat in enumerate(seats):
            y = d.ROW_Y + i * d.PITCH
            selected = seat == cursor
            fg = d.OFF if selected else d.ON
            c.row(y, "", selected)                           # the bar alone, then the columns
            if seat == marked:
                c.icon_in_line(1, y, "play", fg)
            c.text(NAME_X, y, names[seat], d.STRONG if selected else d.BODY, fill=fg)
            if dice:
                for k in range(p["dice"][seat]):
                    c.icon_in_line(DICE_X + k * 5, y, "token", fg)
            c.right(POINTS_R, y, points(seat), d.BODY, fill=fg)
            c.right(d.WIDTH - d.MARGIN + 1, y, "\u03a3" + d.number(p["scores"][seat]), d.BODY, fill=fg)

    def _draw_turn(self, c: Canvas, p: dict) -> None:
        marks = self._marks(len(p["players"]), p["turn"], self.cursor)
        # The header: the bid, the scroll marks, and "pass" at the right end
        # (the cursor's place past the last seat: inverted there, the bar
        # holding it with the rule under it as its lit bottom row).
        pass_w = d.text_width(_("pass"), d.SMALL) + 3
        marks_w = d.text_width(marks, d.SMALL) + 3 if marks else 0
        make = lambda n: _("{name} bid {bid}", name=n, bid=p["bid"])          # noqa: E731
        room = d.WIDTH - 2 * d.MARGIN - pass_w - marks_w - 2 - d.text_width(make(""), d.SMALL)
        c.text(d.MARGIN, d.HEADER_Y, make(distinct_names(p["players"], max(room, 1), d.SMALL)[p["bidder"]]),
               d.SMALL)
        if marks:
            c.right(d.WIDTH - pass_w - 2, d.HEADER_Y, marks, d.SMALL)
        chosen = self.cursor == PASS
        if chosen:
            c.fill(d.WIDTH - pass_w - 1, 0, d.WIDTH - 1, d.RULE_Y - 1)
        c.right(d.WIDTH - 1, d.HEADER_Y, _("pass"), d.SMALL, fill=d.OFF if chosen else d.ON)
        c.hline(0, d.WIDTH - 1, d.RULE_Y)
        self._rows(c, p, lambda s: d.signed(p["hand_points"][s]), p["turn"], self.cursor)
        hint_line(c, _("OK: pass · BACK: menu") if self.cursor == PASS else _("OK: ask · BACK: menu"))

    def _marks(self, n: int, marked: int | None, cursor=None) -> str:
        """The header's scroll marks (▲▼) when rows are out of sight."""
        _, above, below = self._shown(n, marked, cursor)
        return ("\u25b2" if above else "") + ("\u25bc" if below else "")

    def _draw_bid(self, c: Canvas, p: dict) -> None:
        c.header(_("Hand {h}: the winning bid", h=len(p["hands"]) + 1))
        name = distinct_names(p["players"], 70, d.STRONG)[self.cursor]
        c.row(d.ROW_Y, _("Bidder"), self.amount is None, right=name, font=d.STRONG)
        if self.amount is not None:
            c.row(d.ROW_Y + d.PITCH, _("Bid {step}", step=self.amount.label()), True, right=str(self.amount.value),
                  font=d.STRONG)
        hint_line(c, _("OK: next · BACK: menu") if self.amount is None else _("OK: enter · BACK: bidder"))

    def _draw_value(self, c: Canvas, p: dict) -> None:
        # Both names share what the words leave ("Marc-A. demande à Zoé Ł. :")
        words = d.text_width(_("{asker} asks {target} for", asker="", target=""), d.SMALL)
        names = distinct_names(p["players"], (d.WIDTH - 2 * d.MARGIN - words) // 2, d.SMALL)
        asker, target = names[p["turn"]], names[self.cursor]
        c.header(_("{asker} asks {target} for", asker=asker, target=target))
        d.card_row(c, 20, [1, 2, 3, 4, 5, 6], self.value - 1)
        hint_line(c, _("OK: next · BACK: seat"))

    def _draw_hit(self, c: Canvas, p: dict) -> None:
        named_header(c, lambda n: _("Has {target} a {value}?", target=n, value=self.value),
                     p["players"][self.cursor], p["players"])
        c.row(d.ROW_Y, _("Hit: a pair"), self.hit, font=d.STRONG)
        c.row(d.ROW_Y + d.PITCH, _("Miss"), not self.hit, font=d.STRONG)
        hint_line(c, _("OK: enter · BACK: value"))

    def _draw_last(self, c: Canvas, p: dict) -> None:
        seat = p["turn"]
        count = p["dice"][seat]
        dice = self.dice or [1]
        named_header(c, lambda n: _("{name}'s last dice", name=n), p["players"][seat], p["players"],
                     f"{len(dice)}/{count}")
        d.card_row(c, 20, dice + ["·"] * (count - len(dice)), len(dice) - 1)
        hint_line(c, _("OK: next die · BACK: back"))

    def _results(self, c: Canvas, p: dict, make, name: str, right: str, changes: list[str] | None,
                 marked: int | None) -> None:
        """A result: up to four seats a column each (name, ``changes``, the
        total); five or six, a row each (scrolled with UP/DOWN, ▲▼ in the header)."""
        n = len(p["players"])
        totals = ["\u03a3" + d.number(v) for v in p["scores"]]
        if n <= COLUMNS:
            named_header(c, make, name, p["players"], right)
            name_columns(c, d.ROW_Y, p["players"])
            if changes is not None:
                columns(c, d.ROW_Y + d.PITCH, changes, d.STRONG)
            columns(c, d.ROW_Y + 2 * d.PITCH, totals, d.STRONG)
            return
        points = (lambda s: changes[s]) if changes is not None else (lambda s: "")
        marks = self._marks(n, marked)
        named_header(c, make, name, p["players"], marks)
        self._rows(c, p, points, marked, dice=False)

    def _draw_hand_end(self, c: Canvas, p: dict) -> None:
        hand = p["hands"][-1]
        made = hand["points"][hand["bidder"]] >= hand["bid"]
        make = (lambda n: _("{name} made {bid}", name=n, bid=hand["bid"])) if made else \
            (lambda n: _("{name} lost {bid}", name=n, bid=hand["bid"]))
        self._results(c, p, make, p["players"][hand["bidder"]], "", [d.signed(v) for v in hand["delta"]],
                      hand["bidder"])
        hint_line(c, _("OK: go on · BACK: menu"))

    def _draw_game_end(self, c: Canvas, p: dict) -> None:
        winner = p["winner"][0]
        self._results(c, p, lambda n: _("{name} wins!", name=n), p["players"][winner],
                      _("target {t}", t=p["target"]) if p.get("target") else "",
                      ["\u2605" if s in p["winner"] else "" for s in range(len(p["players"]))], winner)
        hint_line(c, _("OK or BACK: menu"))

    def describe_undo(self, step: UndoStep) -> str:
        return describe_undo(step)


def describe_undo(step: UndoStep) -> str:
    """Yenta has no secret entry: the bid, an ask, a pass or the last dice, by name."""
    a = step.action
    name = step.name(a.get("seat"))
    kind = a.get("type")
    if kind == "bid":
        return _("{name}'s bid of {n}", name=name, n=a["amount"])
    if kind == "ask":
        text = _("{asker} asking {target} for a {value}", asker=name, target=step.name(a["target"]), value=a["value"])
        return text + (" " + _("(hit)") if a["hit"] else " " + _("(miss)"))
    if kind == "pass":
        return _("{name}'s pass", name=name)
    if kind == "last":
        return _("{name}'s last dice", name=name)
    return ""
