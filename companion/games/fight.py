"""FIGHT? and FIGHT MORE? (rules.md §3): spend coins, take change, last purse wins.

Every seat starts with the same coins (option ``coins``, value as a string ->
count; FIGHT MORE?'s variants are in :data:`PRESETS`).  On a turn the seat
plays one coin to the table, then may take change from the table worth at
most the played value - 1.  A seat with no coins left is out and skipped; the
last seat holding coins wins.  Money held by the seats falls by at least 1 on
every turn, so a game always ends.

The played coin lands on the table *before* change is taken (the seed: "play
a coin to the centre, then take change"), so the table is checked with it.
It can never come back as change, though: it alone is worth more than the
played value - 1, and so is any coin of its value or above.  Only coins
smaller than the played one can ever be change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Iterator, Mapping

from ..errors import IllegalActionError, InvalidActionError
from ..fields import Dict, Int, List, Seat, Str
from ..i18n import N_
from .base import Game, Move

# The seed's starting purse and FIGHT MORE?'s variants (seed 003).  "fewer" is
# our reading of "fewer 5s and 1s": two of each instead of three and four.
STANDARD = {"20": 1, "10": 2, "5": 3, "1": 4}
PRESETS: Mapping[str, Mapping[str, int]] = MappingProxyType({
    "standard": MappingProxyType(dict(STANDARD)),
    "no-tens": MappingProxyType({"20": 1, "5": 3, "1": 4}),
    "fewer": MappingProxyType({"20": 1, "10": 2, "5": 2, "1": 2}),
    "odd": MappingProxyType({"13": 1, "7": 2, "4": 3, "1": 4}),
})

MAX_VALUE = 9999    # a coin is worth 1..MAX_VALUE
MAX_COUNT = 99      # coins of one value per player
_VALUE_TEXT = re.compile(r"[1-9][0-9]*")


@dataclass(frozen=True)
class Fight:
    players: tuple[str, ...]
    values: tuple[int, ...]              # the coin set, largest value first
    coins: tuple[tuple[int, ...], ...]   # per seat, count per value of `values`
    table: tuple[int, ...]               # count per value of `values`
    turn: int | None                     # seat to play; None once finished
    out: tuple[int, ...] = ()            # seats in the order they went out
    winner: tuple[int, ...] | None = None
    hidden: Mapping = field(default_factory=lambda: MappingProxyType({}))


# -- change ----------------------------------------------------------------------

def _counts(table: Mapping) -> dict[int, int]:
    """A table given as value (int or decimal string) -> count, as int -> int."""
    return {int(v): int(n) for v, n in table.items() if int(n) > 0}


def iter_changes(table: Mapping, played: int) -> Iterator[list[int]]:
    """Every change a seat may take after playing ``played`` with ``table``
    on the table, largest worth first; for equal worth fewer coins first,
    then bigger coins first.  Each change is a list of values, largest
    first; the last one is always ``[]`` (no change).

    ``table`` may or may not already hold the played coin: coins of the
    played value or above are never change, so it makes no difference."""
    counts = _counts(table)
    smaller = sorted((v for v in counts if v < played), reverse=True)
    found: list[tuple[int, int, list[int]]] = []

    def walk(i: int, room: int, taken: list[int]) -> None:
        if i == len(smaller):
            found.append((played - 1 - room, len(taken), list(taken)))
            return
        value = smaller[i]
        most = min(counts[value], room // value)
        for n in range(most, -1, -1):
            walk(i + 1, room - n * value, taken + [value] * n)

    walk(0, played - 1, [])
    found.sort(key=lambda item: (-item[0], item[1], [-v for v in item[2]]))
    return (taken for _worth, _n, taken in found)


def legal_changes(table: Mapping, played: int) -> list[list[int]]:
    """:func:`iter_changes` as a list (what the box cycles through)."""
    return list(iter_changes(table, played))


def largest_change(table: Mapping, played: int) -> list[int]:
    """The change the box proposes first: the largest worth the table can
    make up to ``played`` - 1, in as few coins as possible."""
    return next(iter_changes(table, played))


# -- the rules ---------------------------------------------------------------------

def _check_coins(value: dict, name: str, ctx) -> None:
    for key in value:
        if not _VALUE_TEXT.fullmatch(key) or int(key) > MAX_VALUE:
            raise InvalidActionError(N_("'{name}': '{key}' is not a coin value (a whole number from 1 to {hi})"),
                                     name=name, key=key, hi=MAX_VALUE)
    if sum(value.values()) == 0:
        raise InvalidActionError(N_("'{name}' must give each player at least one coin"), name=name)


def _with(values: tuple, index: int, value) -> tuple:
    return values[:index] + (value,) + values[index + 1:]


def _money(values: tuple[int, ...], counts: tuple[int, ...]) -> int:
    return sum(v * n for v, n in zip(values, counts))


def _index(state: Fight, value: int, what: str) -> int:
    if value not in state.values:
        raise IllegalActionError(N_("{what}: there is no {value} coin in this game (the coins are {coins})"),
                                 what=what, value=value, coins=", ".join(map(str, state.values)))
    return state.values.index(value)


def turn(state: Fight, action: dict) -> Fight:
    seat, played, take = action["seat"], action["play"], action["take"]
    name = state.players[seat]
    if seat != state.turn:
        raise IllegalActionError(N_("it is not seat {seat}'s turn: seat {turn} ({name}) plays now"),
                                 seat=seat + 1, turn=state.turn + 1, name=state.players[state.turn])  # seats count from 1
    i = _index(state, played, N_("play"))
    purse = state.coins[seat]
    if purse[i] == 0:
        raise IllegalActionError(N_("{name} (seat {seat}) holds no {value} coin"), name=name, seat=seat + 1, value=played)
    # The coin lands on the table first; then the change is taken from it.
    purse = _with(purse, i, purse[i] - 1)
    table = _with(state.table, i, state.table[i] + 1)
    for value in sorted(set(take), reverse=True):
        j = _index(state, value, N_("take"))
        wanted = take.count(value)
        if wanted > table[j]:
            raise IllegalActionError(N_("take: the table holds {have} coin(s) of {value} (with the played coin), not {wanted}"),
                                     have=table[j], value=value, wanted=wanted)
        table = _with(table, j, table[j] - wanted)
        purse = _with(purse, j, purse[j] + wanted)
    worth = sum(take)
    if worth > played - 1:
        raise IllegalActionError(N_("take: change worth {worth} is more than {limit} (the {played} played minus 1)"),
                                 worth=worth, limit=played - 1, played=played)
    coins = _with(state.coins, seat, purse)
    out = state.out
    if not any(purse):   # only the mover can run dry: it played its last coin, took nothing
        out = out + (seat,)
    holding = [s for s, c in enumerate(coins) if any(c)]
    if len(holding) == 1:
        return replace(state, coins=coins, table=table, out=out, turn=None, winner=(holding[0],))
    return replace(state, coins=coins, table=table, out=out, turn=next_seat(coins, seat))


def next_seat(coins: tuple[tuple[int, ...], ...], seat: int) -> int:
    """The next seat after ``seat`` in play order that still holds coins."""
    n = len(coins)
    for step in range(1, n + 1):
        nxt = (seat + step) % n
        if any(coins[nxt]):
            return nxt
    return seat  # pragma: no cover - a game with no coins held has ended


class FightGame(Game):
    id = "fight"
    title = N_("FIGHT?")
    min_players, max_players = 2, 6
    options = {
        "coins": Dict(Str(max_len=8), Int(0, MAX_COUNT), required=False, default=None, check=_check_coins),
        "first": Seat(required=False, default=0),
    }
    moves = {
        "turn": Move({"seat": Seat(), "play": Int(), "take": List(Int(), required=False, default=())}, turn),
    }

    def setup(self, players, options):
        chosen = options["coins"] if options["coins"] is not None else STANDARD
        values = tuple(sorted((int(v) for v in chosen), reverse=True))
        start = tuple(chosen[str(v)] for v in values)
        return Fight(players, values, (start,) * len(players), (0,) * len(values), options["first"])

    def is_finished(self, state: Fight) -> bool:
        return state.winner is not None

    def public_view(self, state: Fight) -> dict:
        return {
            "game": self.id,
            "players": list(state.players),
            "scores": [_money(state.values, c) for c in state.coins],
            "coins": [as_object(state.values, c) for c in state.coins],
            "table": as_object(state.values, state.table),
            "turn": state.turn,
            "out": list(state.out),
            "finished": state.winner is not None,
            "winner": list(state.winner) if state.winner is not None else None,
        }

    def seat_view(self, state, seat, own):
        return {}   # nothing is secret in FIGHT?


def as_object(values: tuple[int, ...], counts: tuple[int, ...]) -> dict[str, int]:
    """Counts as the public object value-string -> count, every value listed."""
    return {str(v): n for v, n in zip(values, counts)}


GAME = FightGame()
