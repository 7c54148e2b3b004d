"""FIGHT? on the box: every purse and the table at a glance, quick turns, hints.

The screen is a grid: one column per coin value (largest left) and Σ under
the header's labels, then three lines (the panel's grid holds no more): the
seat to play (▶), the other seat holding coins, the table.  With three or
more seats holding coins, the others share the middle line, each its name
and its purse's value (Σ), in turn order; "+N" at the top left counts any
past three.  The bottom line is the entry.

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
             (the mover against all the others) or why there is none; a
             reason longer than the screen scrolls with UP/DOWN (▲/▼).  OK
             plays the hinted move, BACK returns.  The search runs in the
             hint process (:mod:`companion.hints`), never on the box's
             thread: the screen says "thinking…" (and keeps answering BACK)
             until the answer comes; the box looks for it every
             ``POLL_S`` while, and only while, it waits.
``end``      the winner and the order the others went out; OK or BACK opens
             the menu.

A seat that runs out of coins is said at once in a message ("Ann is out:
no coins left").  The grid uses every row: its bottom line (the turn being
entered) stands for the hint line; BACK there opens the menu.

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
from .base import Controller, UndoStep, center_named, hint_line, lead_marker, short_name

HINT = "hint"
NAME_W = 40          # the name column (the ▶ and a name)
SUM_W = 24           # the Σ column (three digits and a clear gap)
# The grid's lines: the labels (coin values) as the header, three lines on
# the 12-row pitch (14, 26, 38: the seats, then the table), and the entry
# on a bar at the bottom (rows 50-63) that stands for the hint line.  A lit
# cell's bar (rows 13-26) stays in its column, over the digits of the line
# below (their ink starts two rows down), never over a name.
LINES = [d.ROW_Y + i * d.LINE for i in range(d.ROWS_ABOVE_HINT)]
ROWS = len(LINES)    # grid rows: the seats shown and the table
OTHERS = 3           # with three seats or more holding coins: the others on one line, name and Σ
GAP = 6              # between two of them
ENTRY_Y = d.HINT_Y   # the entry line's top: its bar takes rows 50-63
TEXT_LINES = [d.ROW_Y + i * d.LINE for i in range(d.ROWS_ABOVE_HINT)]   # the hint and end screens
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


def by_names(template: str, names: list[str], width: int, font=d.BODY) -> list[str]:
    """``template`` (its names' place marked by NUL) with ``names`` joined by
    commas, in lines of ``width`` pixels broken between names, never inside one."""
    head, _nul, tail = template.partition("\x00")
    lines, line = [], head.rstrip()
    for i, name in enumerate(names):
        word = name + ("," if i < len(names) - 1 else tail)
        candidate = f"{line} {word}" if line else word
        if d.text_width(candidate, font) <= width or not line:
            line = candidate
        else:
            lines.append(line)
            line = word
    lines.append(line)
    return lines


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
        self.scroll = 0                 # hint / end: the first line of a text longer than the screen

    # -- the state -------------------------------------------------------------
    def _values(self) -> list[int]:
        return sorted((int(v) for v in self.public["table"]), reverse=True)

    def _slots(self) -> list:
        """The mover's coins (largest first), then the hint."""
        p = self.public
        purse = p["coins"][p["turn"]]
        return [v for v in self._values() if purse[str(v)]] + [HINT]

    def sync(self, public, change) -> None:
        previous, self.public = self.public, public
        if change is not None and change.kind not in ("action", "undo", "new_game", "resume"):
            return
        if change is not None and change.kind == "action" and not public["finished"]:
            gone = [s for s in public.get("out") or () if s not in (previous.get("out") or ())]
            if gone:        # said at once: the grid only stops listing the seat
                self.app.show_message(_("{name} is out: no coins left", name=public["players"][gone[-1]]))
        self.mode = "end" if public["finished"] else "play"
        self.slot, self.coin, self.hint, self.scroll = 0, None, None, 0
        self._stop_thinking()
        if change is not None and change.kind == "action" and public["finished"]:
            self.app.chirp(2)

    # -- buttons ----------------------------------------------------------------
    def key(self, name: str) -> bool:
        if self.mode == "end":
            if name == "ok":
                self.app.open_menu()
                return True
            if name in ("up", "down"):
                self.scroll = max(0, self.scroll + (1 if name == "down" else -1))
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
            elif name in ("up", "down"):              # the reason, when longer than the screen
                self.scroll = max(0, self.scroll + (1 if name == "down" else -1))
            elif name == "ok" and self.hint:
                self._enter(self.hint.play, list(self.hint.take))
            elif name in ("ok", "back"):
                self.mode = "play"
            return True
        return False

    # -- the hint, from the hint process --------------------------------------------
    def _ask_hint(self) -> None:
        self.mode, self.hint, self.thinking, self.scroll = "hint", None, 1, 0
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
        # Cells of 16 px (two digits and a clear gap, a lit cell's bar): the name
        # column takes what the coins leave, at least NAME_W.
        cell = max(8, min(16, (d.WIDTH - NAME_W - SUM_W) // max(1, len(values))))
        name_w = d.WIDTH - SUM_W - cell * len(values)
        sum_x = d.WIDTH - d.MARGIN + 1        # the Σ column's right end (its last clear column off the panel)

        def x_of(j: int) -> int:          # the right end of value column j (its digits' clear column)
            return name_w + (j + 1) * cell - 1

        for j, v in enumerate(values):
            c.right(x_of(j), d.HEADER_Y, str(v), d.SMALL)
        c.right(sum_x, d.HEADER_Y, "\u03a3", d.SMALL)
        mover = p["turn"]
        order = [(mover + k) % len(p["players"]) for k in range(len(p["players"]))]
        holding = [s for s in order if p["scores"][s] > 0 or s == mover]
        # Two seats holding coins: a grid row each.  More: the seat to play
        # keeps its row and the others share one, name and Σ each (every
        # purse's value on the screen, up to four seats; "+N" counts any further).
        seats = holding[:ROWS - 1] if len(holding) <= ROWS - 1 else holding[:1]
        others = [] if len(holding) <= ROWS - 1 else holding[1:1 + OTHERS]
        if len(holding) > len(seats) + len(others):
            c.text(d.MARGIN, d.HEADER_Y, f"+{len(holding) - len(seats) - len(others)}", d.SMALL)
        c.hline(0, d.WIDTH - 1, d.RULE_Y)
        if others:
            self._draw_others(c, p, others, LINES[1])
        purse_after, table_after = self._after(p)
        slots = self._slots()
        lit = slots[self.slot] if self.mode == "play" and slots[self.slot] != HINT else None
        rows = [(p["players"][s], purse_after if s == mover else p["coins"][s], s == mover) for s in seats]
        rows.append((_("Table"), table_after, False))
        for i, (label, counts, is_mover) in enumerate(rows):
            y = LINES[i] if i < len(seats) else LINES[-1]
            if is_mover:
                lead_marker(c, d.MARGIN, y + 2)
            name_x = d.MARGIN + d.icon_width("play") + 1
            c.text(name_x, y, short_name(label, p["players"], name_w - name_x - 2), d.BODY)
            for j, v in enumerate(values):
                fg = d.ON
                if is_mover and v == lit:
                    c.fill(x_of(j) - cell + 2, y - 1, x_of(j), y + d.LINE)
                    fg = d.OFF
                n = counts[str(v)]
                c.right(x_of(j), y, str(n) if n else "\u00b7", d.BODY, fill=fg)
            c.right(sum_x, y, str(sum(int(v) * n for v, n in counts.items())), d.BODY)
        name = p["players"][mover]
        if self.mode == "change":
            line = _("{coin} \u2192 {change}", coin=self.coin, change=change_text(self.changes[self.change]))
            right = f"{self.change + 1}/{len(self.changes)}"
        elif lit is None:
            line, right = self._named(_("{name}: hint?"), name, p, _("OK")), _("OK")
        else:
            line, right = self._named(_("{name} plays {coin}"), name, p, "\u25b8", coin=lit), "\u25b8"
        c.row(ENTRY_Y, line, True, right=right, font=d.SMALL)

    @staticmethod
    def _draw_others(c: Canvas, p: dict, seats: list[int], y: int) -> None:
        """The seats after the one to play on one line, in turn order: each
        its name (abbreviated distinctly) and "Σ" its purse's value, so that
        the value does not read as a count of the coin column above it."""
        players = p["players"]
        x_start = d.MARGIN + d.icon_width("play") + 1          # under the names of the grid
        slot = (d.WIDTH - d.MARGIN - x_start + GAP) // len(seats)
        for i, seat in enumerate(seats):
            x0 = x_start + i * slot
            total = "\u03a3" + d.number(p["scores"][seat])
            room = slot - GAP - d.text_width(total, d.BODY) - 3
            x = x0 + c.text(x0, y, short_name(players[seat], players, room), d.BODY) + 2
            c.text(x, y, total, d.BODY)

    @staticmethod
    def _named(template: str, name: str, p: dict, right: str, **more) -> str:
        """The entry line with the mover's name abbreviated (distinctly) so
        that the verb and the coin stay whole beside ``right``."""
        room = d.RIGHT - d.LEFT + 1 - d.text_width(right, d.SMALL) - 3
        text = template.format(name=name, **more)
        if d.text_width(text, d.SMALL) <= room:
            return text
        width = room - d.text_width(text, d.SMALL) + d.text_width(name, d.SMALL)
        return template.format(name=short_name(name, p["players"], max(width, 0), d.SMALL), **more)

    def _scrolled(self, c: Canvas, lines: list[str], ys: list[int], font) -> None:
        """``lines`` on the rows ``ys``, from ``self.scroll`` (kept in range);
        a ▲ or ▼ at the right end says more is above or below (UP/DOWN)."""
        self.scroll = min(self.scroll, max(0, len(lines) - len(ys)))
        shown = lines[self.scroll:self.scroll + len(ys)]
        for i, (line, y) in enumerate(zip(shown, ys)):
            c.center(y, line, font, d.MARGIN, d.WIDTH - d.MARGIN - 8)
        if self.scroll > 0:
            c.icon_in_line(d.RIGHT - 4, ys[0], "up")
        if self.scroll + len(ys) < len(lines):
            c.icon_in_line(d.RIGHT - 4, ys[len(shown) - 1], "down")

    def _draw_hint(self, c: Canvas, p: dict) -> None:
        """The move, then the solver's reason: it says whether the hint is
        perfect play or the labelled team-up heuristic (3+ seats).  A reason
        longer than the lines left scrolls (UP/DOWN, ▲/▼); the hint line stays."""
        h = self.hint
        name = p["players"][p["turn"]]
        title = _("Hint for {name}", name=name)
        if d.text_width(title, d.SMALL) > d.WIDTH - 2 * d.MARGIN:
            room = d.WIDTH - 2 * d.MARGIN - d.text_width(title, d.SMALL) + d.text_width(name, d.SMALL)
            title = _("Hint for {name}", name=short_name(name, p["players"], room, d.SMALL))
        c.header(title)
        if self.thinking:
            c.center(TEXT_LINES[0], _("thinking\u2026"), d.STRONG)
            c.center(TEXT_LINES[1], "\u00b7 " * (1 + self.thinking % 3), d.STRONG)     # moves: the box is alive
            hint_line(c, _("OK: wait · BACK: cancel"))      # OK does nothing while the search runs
            return
        ys = TEXT_LINES
        if h:
            c.center(TEXT_LINES[0], _("{coin} \u2192 {change}", coin=h.play, change=change_text(h.take)), d.STRONG)
            ys = TEXT_LINES[1:]
        reason = d.wrap(_(h.reason), d.BODY, d.WIDTH - 2 * d.MARGIN - 10)
        self._scrolled(c, reason, ys, d.BODY)
        if len(reason) > len(ys):           # the ▲/▼ alone do not say which buttons scroll
            hint_line(c, _("▴▾ · OK: play · BACK: back") if h else _("▴▾ · OK or BACK: back"))
        else:
            hint_line(c, _("OK: play it · BACK: back") if h else _("OK or BACK: back"))

    def _draw_end(self, c: Canvas, p: dict) -> None:
        players = p["players"]
        c.header(_("Game over"), _("last in"))
        center_named(c, TEXT_LINES[0], lambda n: _("{name} wins!", name=n), players[p["winner"][0]], (d.STRONG,),
                     others=players)
        # The others, last out first: every name, abbreviated (distinctly)
        # before a third line is needed; more than two lines scroll.
        out = [players[s] for s in reversed(p["out"])]
        room = d.WIDTH - 2 * d.MARGIN - 10
        limit = room
        while True:
            lines = by_names(_("then: {names}", names="\x00"), [short_name(n, players, limit) for n in out], room)
            if len(lines) <= 2 or limit <= 30:
                break
            limit -= 6
        self._scrolled(c, lines, TEXT_LINES[1:], d.BODY)
        hint_line(c, _("OK or BACK: menu"))

    def describe_undo(self, step: UndoStep) -> str:
        return describe_undo(step)


def describe_undo(step: UndoStep) -> str:
    """A turn, public: "Ann's turn: 10 → 5+2"."""
    a = step.action
    if a.get("type") != "turn":
        return ""
    return _("{name}'s turn: {coin} \u2192 {change}", name=step.name(a.get("seat")), coin=a["play"],
             change=change_text(a.get("take") or ()))
