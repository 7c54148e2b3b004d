"""Perfect play for FIGHT? (rules.md §3), and the box's hints.

FIGHT MORE? says it: Fight "is a theoretically solvable problem".  With two
seats holding coins it is solved here exactly.

A *position* is what the seat to move (the mover) holds, what the other seat
holds and what lies on the table, each a count per coin value.  The count of
each value in the whole game never changes (coins only move), so once the
mover's and the other seat's counts are known the table follows.  Each
purse is packed into one integer (mixed radix, one digit per value, largest
value in the highest digit), so a position is a pair of small integers, the
table is ``TOTAL - mover - other`` and a move is an integer addition.

Money held by the seats falls by at least 1 on every turn, so the game graph
is acyclic and a plain memoised depth-first search visits every reachable
position once.  For each position it stores the number of turns left with
perfect play (winner as fast as possible, loser as slow as possible).  The
game ends on the loser's own turn (it plays its last coin), so that number
also says who wins: **even -> the mover wins, odd -> the mover loses**.

With three or more seats holding coins there is no exact answer (the state
space is far too large and "perfect play" is not even well defined among
three).  :func:`hint` then offers, when a small search can afford it, a
*coalition* hint: the mover against every other seat playing together.  A win
there is a real forced win; a loss is only a pessimistic heuristic.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

from .games import fight as rules
from .i18n import N_

# Position budgets (a laptop stores ~120 000 positions a second, a Pi ~5x fewer;
# each costs ~100 bytes).  The default two-player start needs ~44 000.
DUEL_BUDGET = 1_000_000     # an exact two-seat search (`solve`)
HINT_BUDGET = 250_000       # an exact two-seat hint during play
COALITION_BUDGET = 20_000   # a coalition search (3+ seats): about half a second


class TooLarge(Exception):
    """The search needs more positions than its budget."""


# -- two seats: exact ------------------------------------------------------------

@dataclass(frozen=True)
class Position:
    """A two-seat position: counts per value of ``values`` (largest first)."""

    values: tuple[int, ...]
    mover: tuple[int, ...]
    other: tuple[int, ...]
    table: tuple[int, ...]

    @classmethod
    def start(cls, coins: Mapping) -> "Position":
        """Both seats holding the starting coins ``coins`` (value -> count)."""
        values = tuple(sorted((int(v) for v in coins), reverse=True))
        purse = tuple(int(coins[_key(coins, v)]) for v in values)
        return cls(values, purse, purse, (0,) * len(values))


def _key(coins: Mapping, value: int):
    return value if value in coins else str(value)


@dataclass(frozen=True)
class Line:
    """One move and where it leads: ``plies`` turns are left after it with
    perfect play, and ``wins`` says whether it wins for the seat making it."""

    play: int
    take: tuple[int, ...]
    wins: bool
    plies: int

    def as_dict(self) -> dict:
        return {"play": self.play, "take": list(self.take),
                "result": "win" if self.wins else "lose", "turns": self.plies + 1}


class Duel:
    """The exact solver for one coin set and one total of coins per value.
    Use :func:`duel` to get the shared (cached) instance."""

    def __init__(self, values: tuple[int, ...], totals: tuple[int, ...]):
        self.values, self.totals = values, totals
        units, unit = [], 1
        for total in reversed(totals):
            units.append(unit)
            unit *= total + 1
        self.units = tuple(reversed(units))
        self.radix = unit                       # codes are 0 .. radix-1
        self.total = self.encode(totals)
        self.memo: dict[int, int] = {}          # mover*radix + other -> turns left
        self._held: dict[int, tuple[int, ...]] = {}
        self._changes: dict[int, list[int]] = {}

    # packing ---------------------------------------------------------------
    def encode(self, counts: Sequence[int]) -> int:
        return sum(n * u for n, u in zip(counts, self.units))

    def decode(self, code: int) -> tuple[int, ...]:
        return tuple((code // u) % (t + 1) for u, t in zip(self.units, self.totals))

    def held(self, code: int) -> tuple[int, ...]:
        """Indices of the values a purse holds at least one of."""
        found = self._held.get(code)
        if found is None:
            found = self._held[code] = tuple(i for i, n in enumerate(self.decode(code)) if n)
        return found

    def changes(self, i: int, table: int) -> list[int]:
        """Code deltas for the mover playing value ``i`` with ``table`` on the
        table (every legal change, largest first).  Change only uses smaller
        values, whose digits are ``table % units[i]``: the cache key."""
        low = table % self.units[i]
        key = low * len(self.values) + i
        found = self._changes.get(key)
        if found is None:
            counts = self.decode(low)
            smaller = {self.values[j]: counts[j] for j in range(i + 1, len(self.values))}
            index = {v: j for j, v in enumerate(self.values)}
            found = self._changes[key] = [
                -self.units[i] + sum(self.units[index[v]] for v in take)
                for take in rules.iter_changes(smaller, self.values[i])]
        return found

    # search ------------------------------------------------------------------
    def turns_left(self, mover: int, other: int, budget: int = DUEL_BUDGET) -> int:
        """Turns left with perfect play from (mover, other) codes; even means
        the mover wins.  Raises :class:`TooLarge` past ``budget`` stored
        positions (what was stored stays valid for the next call)."""
        if mover == 0:
            raise ValueError("the mover holds no coins")
        memo, radix, total, units, count = self.memo, self.radix, self.total, self.units, len(self.values)
        held, changes = self.held, self.changes
        held_get, changes_get = self._held.get, self._changes.get   # the hot path skips the calls

        def search(a: int, b: int) -> int:
            if b == 0:
                return 0          # the other seat is out: the mover has won
            key = a * radix + b
            found = memo.get(key)
            if found is not None:
                return found
            quickest_win = worst_loss = 0
            table = total - a - b
            for i in held_get(a) or held(a):
                for delta in changes_get(table % units[i] * count + i) or changes(i, table):
                    after = search(b, a + delta)
                    if after & 1:            # odd: the other seat loses, we win
                        if not quickest_win or after < quickest_win:
                            quickest_win = after
                    elif after > worst_loss:
                        worst_loss = after
            found = 1 + (quickest_win or worst_loss)
            if len(memo) >= budget:
                raise TooLarge
            memo[key] = found
            return found

        # Each turn lowers the money held by at least 1: that bounds the depth.
        depth = _money(self.values, self.decode(mover)) + _money(self.values, self.decode(other))
        with _recursion(2 * depth + 200):
            return search(mover, other)

    def lines(self, position: Position, budget: int = DUEL_BUDGET) -> list[Line]:
        """Every move from ``position`` with its outcome, best first: quickest
        win, else longest survival; ties: less money spent first, then the
        larger coin, then the box's order (the larger change first)."""
        a, b = self.encode(position.mover), self.encode(position.other)
        if b == 0:
            raise ValueError("the other seat holds no coins: the game is over")
        table = self.total - a - b
        found = []
        for i in self.held(a):
            smaller = {v: n for v, n in zip(self.values[i + 1:], position.table[i + 1:])}
            for delta, take in zip(self.changes(i, table), rules.iter_changes(smaller, self.values[i])):
                after = self.turns_left(b, a + delta, budget)
                found.append(Line(self.values[i], tuple(take), after % 2 == 1, after))
        found.sort(key=lambda line: (not line.wins, line.plies if line.wins else -line.plies,
                                     line.play - sum(line.take), -line.play))
        return found


@lru_cache(maxsize=4)   # one per coin set and player count in use; each memo may be large
def duel(values: tuple[int, ...], totals: tuple[int, ...]) -> Duel:
    """The solver (and its memo) shared by every position with these coins."""
    return Duel(values, totals)


def duel_for(position: Position) -> Duel:
    totals = tuple(a + b + t for a, b, t in zip(position.mover, position.other, position.table))
    return duel(position.values, totals)


def analyse(position: Position, budget: int = DUEL_BUDGET) -> dict:
    """The exact value of a two-seat position: ``result`` ("win"/"lose" for
    the mover), ``turns`` left with perfect play, ``best`` (every move as
    good as the best) and ``moves`` (all of them, best first)."""
    solver = duel_for(position)
    lines = solver.lines(position, budget)
    if not lines:
        raise ValueError("the mover holds no coins")
    top = lines[0]
    best = [line for line in lines if (line.wins, line.plies) == (top.wins, top.plies)]
    return {"result": "win" if top.wins else "lose", "turns": top.plies + 1,
            "best": [line.as_dict() for line in best], "moves": [line.as_dict() for line in lines]}


# -- three or more seats: the mover against a coalition -----------------------------

_WON = 10**6   # a coalition score: +(_WON - turns) when the mover wins, -(...) when it loses


def _coalition(values: tuple[int, ...], purses: tuple[tuple[int, ...], ...],
               table: tuple[int, ...], budget: int) -> list[tuple[int, tuple[int, ...], int]]:
    """Seat 0 of ``purses`` (in turn order, seat 0 to move) against all the
    others playing as one team.  Returns (play, take, score) for each first
    move; score > 0 is a forced win in ``_WON - score`` more turns."""
    index = {v: j for j, v in enumerate(values)}
    count = len(purses)
    memo: dict[Any, int] = {}
    change_memo: dict[Any, list] = {}

    def moves(purse, table):
        for j, n in enumerate(purse):
            if n:
                key = (j, table[j + 1:])
                takes = change_memo.get(key)
                if takes is None:
                    smaller = dict(zip(values[j + 1:], table[j + 1:]))
                    takes = change_memo[key] = [tuple(t) for t in rules.iter_changes(smaller, values[j])]
                for take in takes:
                    mine, board = list(purse), list(table)
                    mine[j] -= 1
                    board[j] += 1
                    for v in take:
                        mine[index[v]] += 1
                        board[index[v]] -= 1
                    yield values[j], take, tuple(mine), tuple(board)

    def after(purses, k, mine, board):
        """Score after seat k's move left it ``mine`` and the table ``board``."""
        purses = purses[:k] + (mine,) + purses[k + 1:]
        if not any(purses[0]):
            return -_WON
        holding = [s for s in range(count) if any(purses[s])]
        if holding == [0]:
            return _WON
        nxt = next(s for s in [(k + step) % count for step in range(1, count + 1)] if any(purses[s]))
        score = search(purses, board, nxt)
        return score - 1 if score > 0 else score + 1

    def search(purses, table, k):
        key = (purses, table, k)
        found = memo.get(key)
        if found is None:
            scores = [after(purses, k, mine, board) for _p, _t, mine, board in moves(purses[k], table)]
            found = max(scores) if k == 0 else min(scores)
            if len(memo) >= budget:
                raise TooLarge
            memo[key] = found
        return found

    depth = sum(_money(values, p) for p in purses)
    with _recursion(3 * depth + 200):
        return [(play, take, after(purses, 0, mine, board)) for play, take, mine, board in moves(purses[0], table)]


# -- hints -------------------------------------------------------------------------

@dataclass(frozen=True)
class Hint:
    """A suggested move for the seat to play, or (``play`` None) why there is none.

    ``exact``: perfect play (two seats holding coins).  Otherwise the hint
    comes from the coalition search: ``result`` "win" is still a forced win
    (it beats every other seat playing together), "lose" only means the
    mover loses if all the others team up.  ``turns``: turns left with that
    play, this one included.  ``reason`` is an English template (``N_``)."""

    play: int | None
    take: tuple[int, ...] = ()
    seat: int | None = None
    result: str | None = None
    turns: int | None = None
    exact: bool = False
    reason: str = ""

    def __bool__(self) -> bool:
        return self.play is not None

    def action(self) -> dict:
        """The hint as a log action."""
        return {"type": "turn", "seat": self.seat, "play": self.play, "take": list(self.take)}


def hint(state_or_position, budget: int | None = None) -> Hint:
    """A move for the seat to play.  Accepts a :class:`Position` (two seats),
    a FIGHT? game state, or its public view (``Timeline.public()``)."""
    if isinstance(state_or_position, Position):
        return _duel_hint(state_or_position, None, budget or HINT_BUDGET)
    values, purses, table, turn = _read(state_or_position)
    if turn is None:
        return Hint(None, reason=N_("the game is over"))
    order = [(turn + step) % len(purses) for step in range(len(purses))]
    order = [s for s in order if any(purses[s])]
    if len(order) == 2:
        position = Position(values, purses[order[0]], purses[order[1]], table)
        return _duel_hint(position, turn, budget or HINT_BUDGET)
    try:
        lines = _coalition(values, tuple(purses[s] for s in order), table, budget or COALITION_BUDGET)
    except TooLarge:
        return Hint(None, seat=turn, reason=N_("no hint: with three or more players holding coins "
                                               "this position is too large to search quickly"))
    play, take, score = max(lines, key=lambda line: line[2])
    if score > 0:
        return Hint(play, take, turn, "win", _WON - score + 1, False,
                    N_("this wins even if every other player teams up against you"))
    return Hint(play, take, turn, "lose", _WON + score + 1, False,
                N_("heuristic: if every other player teams up against you, this survives longest"))


def _duel_hint(position: Position, seat: int | None, budget: int) -> Hint:
    try:
        value = analyse(position, budget)
    except TooLarge:
        return Hint(None, seat=seat, reason=N_("no hint: this position is too large to solve quickly"))
    top = value["best"][0]
    reason = N_("perfect play: this wins") if value["result"] == "win" else \
        N_("perfect play loses from here; this survives longest")
    return Hint(top["play"], tuple(top["take"]), seat, value["result"], value["turns"], True, reason)


def _read(state) -> tuple:
    """(values, purses, table, turn) from a game state or its public view."""
    if isinstance(state, rules.Fight):
        return state.values, list(state.coins), state.table, state.turn
    if isinstance(state, Mapping) and state.get("game") == "fight":
        values = tuple(sorted((int(v) for v in state["table"]), reverse=True))
        purses = [tuple(c[str(v)] for v in values) for c in state["coins"]]
        return values, purses, tuple(state["table"][str(v)] for v in values), state["turn"]
    raise TypeError("hint() needs a FIGHT? state, its public view or a Position")


# -- the start of a game ------------------------------------------------------------

def solve(coins: Mapping, players: int = 2, budget: int | None = None) -> dict:
    """The value of the start of a game with ``players`` seats each holding
    ``coins``, for the first seat.  Exact for two players; for more, the
    coalition view (raises :class:`TooLarge` if that is too big)."""
    start = Position.start(coins)
    if players == 2:
        solver = duel_for(start)
        value = analyse(start, budget or DUEL_BUDGET)
        value.update(exact=True, positions=len(solver.memo))
        return value
    purses = (start.mover,) * players
    lines = _coalition(start.values, purses, start.table, budget or COALITION_BUDGET)
    top = max(score for _p, _t, score in lines)
    return {
        "result": "win" if top > 0 else "lose", "exact": False,
        "turns": (_WON - top if top > 0 else _WON + top) + 1,
        "best": [{"play": p, "take": list(t)} for p, t, score in lines if score == top],
    }


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Usage(message)


def _coin_set(text: str) -> dict[str, int]:
    coins: dict[str, int] = {}
    for part in text.split(","):
        value, sep, count = part.strip().partition(":")
        if not (sep and _whole(value) and _whole(count)):
            raise argparse.ArgumentTypeError(f"'{part}' is not VALUE:COUNT (e.g. 20:1)")
        if not 1 <= int(value) <= rules.MAX_VALUE or int(count) > rules.MAX_COUNT:
            raise argparse.ArgumentTypeError(f"'{part}': a value is 1 to {rules.MAX_VALUE}, "
                                             f"a count 0 to {rules.MAX_COUNT}")
        if str(int(value)) in coins:
            raise argparse.ArgumentTypeError(f"the value {int(value)} is given twice")
        coins[str(int(value))] = int(count)
    if not any(coins.values()):
        raise argparse.ArgumentTypeError("the coin set holds no coin")
    return coins


def _whole(text: str) -> bool:
    return re.fullmatch(r"[0-9]{1,9}", text) is not None


def _players(text: str) -> int:
    if not _whole(text) or not 2 <= int(text) <= 6:
        raise argparse.ArgumentTypeError(f"must be 2 to 6, got '{text}'")
    return int(text)


def _positive(text: str) -> int:
    if not _whole(text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got '{text}'")
    return int(text)


def solve_cli(argv: Sequence[str] | None = None) -> int:
    """``companion solve fight [--coins 20:1,10:2,5:3,1:4 | --preset NAME]
    [--players N] [--max-positions N] [--json]``.  Exit 0 with the answer,
    1 when the search is too large, 2 on a bad command line (one line on
    stderr, no traceback)."""
    parser = _Parser(prog="companion solve", description="Solve the start of a game with perfect play.")
    parser.add_argument("game", choices=["fight"])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--coins", type=_coin_set, help="each player's coins, VALUE:COUNT,... (default 20:1,10:2,5:3,1:4)")
    group.add_argument("--preset", choices=sorted(rules.PRESETS), help="a FIGHT MORE? coin set")
    parser.add_argument("--players", type=_players, default=2, help="2 (exact) to 6 (coalition heuristic)")
    parser.add_argument("--max-positions", type=_positive, default=None, help="give up past this many positions")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except _Usage as exc:
        print(f"companion solve: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:      # --help
        return exc.code if isinstance(exc.code, int) else 0
    coins = args.coins or dict(rules.PRESETS[args.preset or "standard"])
    started = time.perf_counter()
    try:
        value = solve(coins, args.players, args.max_positions)
    except TooLarge:
        print(f"companion solve: too large to solve within the position budget "
              f"({args.players} players, coins {_show(coins)})", file=sys.stderr)
        return 1
    value["seconds"] = round(time.perf_counter() - started, 3)
    value.update(players=args.players, coins={str(v): n for v, n in coins.items()})
    if args.json:
        print(json.dumps(value))
        return 0
    money = sum(int(v) * n for v, n in coins.items())
    print(f"FIGHT? for {args.players} players, each holding {_show(coins)} ({money} each)")
    if value["exact"]:
        verdict = "wins" if value["result"] == "win" else "loses"
        print(f"With perfect play the first player {verdict}; the game lasts {value['turns']} turns.")
    else:
        print("Not solved exactly: the first player against all the others playing as one team "
              f"{'still wins' if value['result'] == 'win' else 'loses'} "
              f"(in {value['turns']} turns).")
    print("Best first moves: " + "; ".join(_show_move(m) for m in value["best"]))
    for move in value.get("moves", ()):
        verdict = "wins" if move["result"] == "win" else "loses"
        print(f"  {_show_move(move):<24} {verdict} in {move['turns']} turns")
    extra = f", {value['positions']} positions" if "positions" in value else ""
    print(f"({value['seconds']} s{extra})")
    return 0


def _show(coins: Mapping) -> str:
    return " ".join(f"{v}:{n}" for v, n in sorted(coins.items(), key=lambda item: -int(item[0])))


def _show_move(move: Mapping) -> str:
    take = " + ".join(map(str, move["take"]))
    return f"play {move['play']}" + (f", take {take}" if take else "")


# -- small helpers --------------------------------------------------------------------

def _money(values: Sequence[int], counts: Sequence[int]) -> int:
    return sum(v * n for v, n in zip(values, counts))


class _recursion:
    """Raise the recursion limit for a search of known depth (plain Python
    frames only: no C stack is at stake), and put it back afterwards."""

    def __init__(self, needed: int):
        self.needed = needed

    def __enter__(self):
        self.saved = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.saved, self.needed + 1000))

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.saved)
        return False
