"""FIGHT? on the box: every purse and the table at a glance, quick turns, hints.

The screen is a grid: one column per coin value (largest left) and Σ, one
row per seat still holding coins in turn order from the seat to play (a
triangle marks it; with four or more such seats the rows show the seat to
play and the next two), then the table; the bottom line is the entry.

``play``     the seat to play picks its coin: the cursor is a lit cell in its
             row, starting on its largest coin; DOWN = next smaller coin, UP =
             next larger, wrapping through a last slot, *hint?* (so UP once
             from the start).  OK on a coin → ``change``; OK on *hint?* →
             ``hint``.
``change``   the change, largest legal one first (:func:`legal_changes`):
             UP/DOWN cycle through every legal change down to "no change"; the
             grid previews the purse and table after the turn.  OK enters the
             turn; BACK returns to ``play``.
``hint``     :func:`companion.fight_solver.hint` for the seat to play: exact
             with two seats holding coins, else the labelled "team-up" hint
             (the mover against all the others) or why there is none.  OK
             plays the hinted move, BACK returns.  The search runs in the
             hint process (:mod:`companion.hints`), never on the box's
             thread: the screen says "thinking…" (and keeps answering BACK)
             until the answer comes; the box looks for it every
             ``POLL_S`` while, and only while, it waits.
``end``      the winner and the order the others went out; OK opens the menu.

Presses per turn: coin moves (0..2 with a standard purse) + OK + change moves
(0 when the largest change is taken) + OK: 2 at least.  A hint: UP + OK to
see it, OK to play it: 3.
"""

from __future__ import annotations

from companion import hints
from companion.games.fight import PRESETS, legal_changes
from companion.i18n import N_, _

from .. import draw as d
from ..draw import Canvas
from .base import Controller, lead_marker

HINT = "hint"
NAME_W = 40          # the name column
SUM_W = 20           # the Σ column
ROWS = 4             # grid rows between the labels and the entry line (seats + table)
POLL_S = 0.1         # while a hint is being searched: look for the answer, move the dots


class CoinSet(dict):
    """A coin set as the ``coins`` option (a JSON object), hashable so that the
    new-game screen can list it among an option's choices."""

    def __hash__(self):
        return hash(tuple(sorted(self.items())))


PRESET_LABELS = {"standard": N_("standard"), "no-tens": N_("no 10s"), "fewer": N_("fewer 5s, 1s"),
                 "odd": N_("13·7·4·1")}


def _coin_choices(players):
    return [(CoinSet(coins), _(PRESET_LABELS.get(name, name))) for name, coins in PRESETS.items()]


def _first_choices(players):
    return [(seat, name) for seat, name in enumerate(players)]


def change_text(take) -> str:
    return "+".join(str(v) for v in take) if take else _("no change")


class FightController(Controller):
    game_id = "fight"
    OPTIONS = [
        {"key": "coins", "label": N_("Coins"), "choices": _coin_choices,
         "default": lambda players: CoinSet(PRESETS["standard"])},
        {"key": "first", "label": N_("First player"), "choices": _first_choices, "default": lambda players: 0},
    ]

    def __init__(self, app):
        super().__init__(app)
        self.mode = "play"
        self.slot = 0                   # play: index into _slots()
        self.changes: list[list[int]] = []
        self.change = 0                 # change: index into self.changes
        self.coin: int | None = None
        self.hint = None
        self.thinking = 0               # > 0: waiting for the hint process (counts the polls)
        self._asked = None              # the hint ask the screen is waiting for
        self._answers: list = []        # (ask, hint) put by the hint worker's thread

    # -- the state -------------------------------------------------------------
    def _values(self) -> list[int]:
        return sorted((int(v) for v in self.public["table"]), reverse=True)

    def _slots(self) -> list:
        """The mover's coins (largest first), then the hint."""
        p = self.public
        purse = p["coins"][p["turn"]]
        return [v for v in self._values() if purse[str(v)]] + [HINT]

    def sync(self, public, change) -> None:
        self.public = public
        if change is not None and change.kind not in ("action", "undo", "new_game", "resume"):
            return
        self.mode = "end" if public["finished"] else "play"
        self.slot, self.coin, self.hint = 0, None, None
        self._stop_thinking()
        if change is not None and change.kind == "action" and public["finished"]:
            self.app.chirp(2)

    # -- buttons ----------------------------------------------------------------
    def key(self, name: str) -> bool:
        if self.mode == "end":
            if name == "ok":
                self.app.open_menu()
                return True
            return False
        if self.mode == "play":
            slots = self._slots()
            if name in ("up", "down"):
                self.slot = (self.slot + (1 if name == "down" else -1)) % len(slots)
            elif name == "ok":
                if slots[self.slot] == HINT:
                    self._ask_hint()
                else:
                    self._choose(slots[self.slot])
            else:
                return False
            return True
        if self.mode == "change":
            if name in ("up", "down"):
                self.change = (self.change + (1 if name == "down" else -1)) % len(self.changes)
            elif name == "ok":
                self._enter(self.coin, self.changes[self.change])
            elif name == "back":
                self.mode = "play"
            return True
        if self.mode == "hint":
            if self.thinking:
                if name == "back":               # the answer, when it comes, is dropped
                    self._stop_thinking()
                    self.mode = "play"
            elif name == "ok" and self.hint:
                self._enter(self.hint.play, list(self.hint.take))
            elif name in ("ok", "back"):
                self.mode = "play"
            return True
        return False

    # -- the hint, from the hint process --------------------------------------------
    def _ask_hint(self) -> None:
        self.mode, self.hint, self.thinking = "hint", None, 1
        self._asked = asked = object()
        worker = getattr(self.app, "hints", None) or hints.shared()
        # done() runs on the worker's thread (or here when the answer is
        # known): it only hands the answer over; the box's thread takes it.
        worker.ask(self.public, lambda hint: self._answers.append((asked, hint)))
        self._look_for_answer()

    def _look_for_answer(self) -> None:
        while self._answers:
            asked, hint = self._answers.pop(0)
            if asked is self._asked and self.mode == "hint":
                self.hint, self.thinking = hint, 0
                return
        if self.thinking:
            self.thinking += 1
            self.app.set_timer("fight-hint", POLL_S, self._look_for_answer)

    def _stop_thinking(self) -> None:
        if self.thinking:
            self.app.cancel_timer("fight-hint")
        self.thinking, self._asked = 0, None

    def _choose(self, coin: int) -> None:
        self.coin = coin
        self.changes = legal_changes(self.public["table"], coin)   # largest first, "no change" last
        self.change = 0
        self.mode = "change"

    def _enter(self, coin: int, take: list[int]) -> None:
        p = self.public
        if not self.app.submit({"type": "turn", "seat": p["turn"], "play": coin, "take": list(take)}):
            self.mode = "play"

    # -- screens ---------------------------------------------------------------
    def draw(self, c: Canvas, p: dict) -> None:
        if self.mode == "hint":
            return self._draw_hint(c, p)
        if self.mode == "end":
            return self._draw_end(c, p)
        self._draw_grid(c, p)

    def _after(self, p: dict):
        """The mover's purse and the table after the turn being entered (a preview)."""
        purse, table = dict(p["coins"][p["turn"]]), dict(p["table"])
        if self.mode == "change":
            purse[str(self.coin)] -= 1
            table[str(self.coin)] += 1
            for v in self.changes[self.change]:
                purse[str(v)] += 1
                table[str(v)] -= 1
        return purse, table

    def _draw_grid(self, c: Canvas, p: dict) -> None:
        values = self._values()
        cell = max(8, min(18, (d.WIDTH - NAME_W - SUM_W) // max(1, len(values))))

        def x_of(j: int) -> int:          # the right edge of value column j
            return NAME_W + (j + 1) * cell - 2

        for j, v in enumerate(values):
            c.right(x_of(j), 0, str(v), d.SMALL)
        c.right(d.WIDTH - 1, 0, "\u03a3", d.SMALL)
        c.hline(0, d.WIDTH - 1, 11)
        mover = p["turn"]
        order = [(mover + k) % len(p["players"]) for k in range(len(p["players"]))]
        holding = [s for s in order if p["scores"][s] > 0 or s == mover]
        seats = holding[:ROWS - 1]
        if len(holding) > len(seats):
            c.text(0, 0, f"+{len(holding) - len(seats)}", d.SMALL)     # seats further on, not shown
        purse_after, table_after = self._after(p)
        slots = self._slots()
        lit = slots[self.slot] if self.mode == "play" and slots[self.slot] != HINT else None
        rows = [(p["players"][s], purse_after if s == mover else p["coins"][s], s == mover) for s in seats]
        rows.append((_("Table"), table_after, False))
        for i, (label, counts, is_mover) in enumerate(rows):
            y = 12 + i * 10
            if is_mover:
                lead_marker(c, 0, y + 2)
            c.text_fit(5, y, label, NAME_W - 7, d.SMALL)
            for j, v in enumerate(values):
                fg = d.ON
                if is_mover and v == lit:
                    c.fill(x_of(j) - cell + 3, y, x_of(j) + 1, y + 10)
                    fg = d.OFF
                n = counts[str(v)]
                c.right(x_of(j), y, str(n) if n else "\u00b7", d.SMALL, fill=fg)
            c.right(d.WIDTH - 1, y, str(sum(int(v) * n for v, n in counts.items())), d.SMALL)
        name = p["players"][mover]
        if self.mode == "change":
            line = _("{coin} \u2192 {change}", coin=self.coin, change=change_text(self.changes[self.change]))
            right = f"{self.change + 1}/{len(self.changes)}"
        elif lit is None:
            line, right = _("{name}: hint?", name=name), _("OK")
        else:
            line, right = _("{name} plays {coin}", name=name, coin=lit), "\u25b8"
        c.row(53, line, True, height=11, right=right, font=d.SMALL)

    def _draw_hint(self, c: Canvas, p: dict) -> None:
        """The move, then the solver's reason: it says whether the hint is
        perfect play or the labelled team-up heuristic (3+ seats)."""
        h = self.hint
        name = p["players"][p["turn"]]
        if self.thinking:
            c.header(_("Hint for {name}", name=name))
            c.center(17, _("thinking\u2026"), d.STRONG)
            c.center(31, "\u00b7 " * (1 + self.thinking % 3), d.STRONG)     # moves: the box is alive
            c.center(52, _("BACK: cancel"), d.SMALL)
            return
        c.header(_("Hint for {name}", name=name), _("OK: play it") if h else "")
        reason = d.wrap(_(h.reason), d.SMALL, d.WIDTH - 2)
        y, step = 14, 10
        if h:
            move = _("{coin} \u2192 {change}", coin=h.play, change=change_text(h.take))
            if len(reason) < 4:
                c.center(15, move, d.largest_fitting(move, d.WIDTH - 2, (d.TITLE, d.STRONG, d.BODY)))
                y, step = 31, 10
            else:
                c.center(13, move, d.largest_fitting(move, d.WIDTH - 2, (d.STRONG, d.BODY)))
                y, step = 26, 9
        for line in reason[: (d.HEIGHT - y) // step]:
            c.center(y, line, d.SMALL)
            y += step

    def _draw_end(self, c: Canvas, p: dict) -> None:
        winner = p["players"][p["winner"][0]]
        c.header(_("Game over"), _("OK: menu"))
        text = _("{name} wins!", name=winner)
        c.center(15, text, d.largest_fitting(text, d.WIDTH - 2, (d.BIG, d.TITLE, d.STRONG)))
        out = [p["players"][s] for s in reversed(p["out"])]
        for i, line in enumerate(d.wrap(_("then: {names}", names=", ".join(out)), d.SMALL, d.WIDTH - 2)[:2]):
            c.center(38 + i * 10, line, d.SMALL)
