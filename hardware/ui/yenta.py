"""Yenta on the box: the bid, asks and passes, the last player's dice.

Screens (``self.mode``), re-derived from the public state after a change:

``bid``       who won the auction and for how much: the seat (UP/DOWN, OK; it
              starts on the last hand's bidder) then the amount, ±5 then ±1
              from the last bid (see :mod:`.number_entry`).
``turn``      the table: one row per seat with its dice (dots), hand points
              and total, a triangle at the seat that asks; the header names the
              bid.  The cursor picks whom the asker asks (it starts on the next
              seat with dice) or, past the last seat, *pass* (in the header).
              OK on a seat → ``value``; OK on *pass* passes.
``value``     the value asked, 1..6 (wrapping; it starts on the last value asked).
``hit``       "Hit" or "Miss" (starts on Hit); OK enters the ask.
``last``      the last seat with dice shows them: one value per die (each
              starts on the one before), OK after the last die settles the hand.
``hand_end``  the bid made or lost, everyone's hand points and totals.
``game_end``  the winner and the totals; OK or BACK opens the menu.

Each screen ends with a hint line saying what OK and BACK do.  Four seat
rows fit above it: with five or six seats the table scrolls with its
cursor, and the results (starting on the bidder or the winner) scroll with
UP/DOWN; a small triangle at the right end of the first or last row says
that more seats are above or below.

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
from .base import REVEAL_S, Controller, UndoStep, hint_line, lead_marker, scroll_mark
from .number_entry import Stepper

DICE = 5
PASS = "pass"
ROW_H = 10
ROWS = 4                # seat rows above the hint line
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
        if self.mode in ("hand_end", "game_end") and name in ("up", "down") and len(p["players"]) > ROWS:
            # The seats that do not fit: a press shows the next one and keeps
            # the hand's result up for another REVEAL_S.
            first = self._first(len(p["players"]), *self._result_focus(p))
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

    def _first(self, n: int, marked: int | None, cursor=None) -> int:
        """The first seat row shown: where UP/DOWN scrolled a result to, else
        the one that keeps the cursor (else the marked seat) in sight."""
        if n <= ROWS:
            return 0
        if self.top is not None and self.mode in ("hand_end", "game_end"):
            return self.top
        focus = cursor if isinstance(cursor, int) else marked
        return max(0, min(focus - ROWS + 2, n - ROWS)) if isinstance(focus, int) else 0

    def _result_focus(self, p: dict) -> tuple:
        """The marked seat and the cursor of a result screen's rows."""
        if self.mode == "game_end":
            return None, p["winner"][0]
        return p["hands"][-1]["bidder"], None

    def _rows(self, c: Canvas, p: dict, y0: int, points, marked: int | None, cursor=None) -> None:
        """Seats as rows: triangle, name, dice (dots), ``points`` (a column) and
        the total; ROWS of them at most, so that the hint line stays under
        them (see :meth:`_first`), with a triangle where more seats are."""
        n = len(p["players"])
        first = self._first(n, marked, cursor)
        last = min(n, first + ROWS)
        right = d.WIDTH - 1 if n <= ROWS else d.WIDTH - 8     # room for the scroll marks
        for i, seat in enumerate(range(first, last)):
            y = y0 + i * ROW_H
            fg = d.ON
            if seat == cursor:
                c.fill(0, y, d.WIDTH - 1, y + ROW_H - 1)
                fg = d.OFF
            if seat == marked:
                lead_marker(c, 0, y + 2, fill=fg)
            c.text_fit(5, y - 1, p["players"][seat], 44, d.SMALL, fill=fg)
            for k in range(p["dice"][seat]):
                c.fill(51 + k * 5, y + 3, 54 + k * 5, y + 6, fg)
            c.right(94, y - 1, points(seat), d.SMALL, fill=fg)
            c.right(right, y - 1, "\u03a3" + d.number(p["scores"][seat]), d.SMALL, fill=fg)
            if (seat == first and first > 0) or (seat == last - 1 and last < n):
                scroll_mark(c, d.WIDTH - 6, y + 3, seat == first and first > 0, fill=fg)

    def _draw_turn(self, c: Canvas, p: dict) -> None:
        c.header(_("{name} bid {bid}", name=p["players"][p["bidder"]], bid=p["bid"]))
        width = d.text_width(_("pass"), d.SMALL) + 6
        if self.cursor == PASS:
            c.fill(d.WIDTH - width, 0, d.WIDTH - 1, 11)
        c.right(d.WIDTH - 3, 0, _("pass"), d.SMALL, fill=d.OFF if self.cursor == PASS else d.ON)
        # Four rows at most (they scroll with the cursor): the hint line stays.
        self._rows(c, p, 14, lambda s: d.signed(p["hand_points"][s]), p["turn"], self.cursor)
        hint_line(c, _("OK: pass · BACK: menu") if self.cursor == PASS else _("OK: ask · BACK: menu"))

    def _draw_bid(self, c: Canvas, p: dict) -> None:
        c.header(_("Hand {h}: the winning bid", h=len(p["hands"]) + 1))
        name = p["players"][self.cursor]
        c.row(16, _("Bidder"), self.amount is None, height=15, right=d.fit(name, d.TITLE, 70), font=d.TITLE)
        if self.amount is not None:
            c.row(33, _("Bid {step}", step=self.amount.label()), True, height=15, right=str(self.amount.value),
                  font=d.TITLE)
        hint_line(c, _("OK: next · BACK: menu") if self.amount is None else _("OK: enter · BACK: bidder"))

    def _draw_value(self, c: Canvas, p: dict) -> None:
        asker, target = p["players"][p["turn"]], p["players"][self.cursor]
        c.header(_("{asker} asks {target} for", asker=asker, target=target))
        d.card_row(c, 20, [1, 2, 3, 4, 5, 6], self.value - 1)
        hint_line(c, _("OK: next · BACK: seat"))

    def _draw_hit(self, c: Canvas, p: dict) -> None:
        target = p["players"][self.cursor]
        c.header(_("Has {target} a {value}?", target=target, value=self.value))
        c.row(17, _("Hit: a pair"), self.hit, height=15, font=d.TITLE)
        c.row(34, _("Miss"), not self.hit, height=15, font=d.TITLE)
        hint_line(c, _("OK: enter · BACK: value"))

    def _draw_last(self, c: Canvas, p: dict) -> None:
        seat = p["turn"]
        count = p["dice"][seat]
        dice = self.dice or [1]
        c.header(_("{name}'s last dice", name=p["players"][seat]), f"{len(dice)}/{count}")
        d.card_row(c, 20, dice + ["·"] * (count - len(dice)), len(dice) - 1)
        hint_line(c, _("OK: next die · BACK: back"))

    def _draw_hand_end(self, c: Canvas, p: dict) -> None:
        hand = p["hands"][-1]
        bidder = p["players"][hand["bidder"]]
        made = hand["points"][hand["bidder"]] >= hand["bid"]
        headline = _("{name} made {bid}", name=bidder, bid=hand["bid"]) if made else \
            _("{name} lost {bid}", name=bidder, bid=hand["bid"])
        c.header(headline, _("change"))
        points = dict(enumerate(hand["delta"]))
        self._rows(c, {**p, "dice": [0] * len(p["players"])}, 14, lambda s: d.signed(points[s]), hand["bidder"])
        hint_line(c, _("OK: go on · BACK: menu"))

    def _draw_game_end(self, c: Canvas, p: dict) -> None:
        winner = p["players"][p["winner"][0]]
        c.header(_("{name} wins!", name=winner), _("target {t}", t=p["target"]) if p.get("target") else "")
        self._rows(c, {**p, "dice": [0] * len(p["players"])}, 14, lambda s: "", None, p["winner"][0])
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
