"""The free scoreboard (rules.md §7): for any other game on the shelf.

Free score changes, optional tokens, an optional target score or token count,
and a generic *secret round*: every seat enters a number secretly and all are
revealed together.  It is the smallest game, and the reference example of a
game declaration.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from ..errors import IllegalActionError, InvalidActionError
from ..fields import Int, Seat, Str
from ..i18n import N_
from ..text import unsafe_char
from .base import Game, Move

BIG = 10**9  # scores and secrets are whole numbers within ±BIG
NAME_MAX = 60   # characters of the name the table gives the game it scores


def _shown_name(value: str, name: str, ctx) -> None:
    """The game's name is shown (history, BG Stats): not blank, nothing a screen would obey."""
    if not value.strip():
        raise InvalidActionError(N_("'{name}' must not be blank"), name=name)
    found = unsafe_char(value)
    if found:
        raise InvalidActionError(N_("'{where}' holds the character {char}: names and labels must not "
                                    "hold control or text-direction characters"), where=name, char=found)


@dataclass(frozen=True)
class Board:
    players: tuple[str, ...]
    scores: tuple[int, ...]
    tokens: tuple[int, ...]
    target: int | None
    tokens_to_win: int | None
    hidden: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    reveal: tuple[int, ...] | None = None
    winner: tuple[int, ...] | None = None


def _with(values: tuple, seat: int, value) -> tuple:
    return values[:seat] + (value,) + values[seat + 1:]


def add(state: Board, action: dict) -> Board:
    seat = action["seat"]
    scores = _with(state.scores, seat, state.scores[seat] + action["points"])
    winner = None
    if state.target is not None and max(scores) >= state.target:
        best = max(scores)
        winner = tuple(s for s, v in enumerate(scores) if v == best)
    return replace(state, scores=scores, winner=winner)


def token(state: Board, action: dict) -> Board:
    seat, delta = action["seat"], action["delta"]
    count = state.tokens[seat] + delta
    if count < 0:
        raise IllegalActionError(N_("{name} has only {n} tokens"), name=state.players[seat], n=state.tokens[seat])
    tokens = _with(state.tokens, seat, count)
    winner = None
    if state.tokens_to_win is not None and count >= state.tokens_to_win and delta > 0:
        winner = tuple(s for s, v in enumerate(tokens) if v >= state.tokens_to_win)
    return replace(state, tokens=tokens, winner=winner)


def secret(state: Board, action: dict) -> Board:
    seat = action["seat"]
    if seat in state.hidden:
        raise IllegalActionError(N_("{name} has already entered a number in this secret round"),
                                 name=state.players[seat])
    hidden = dict(state.hidden)
    hidden[seat] = action["value"]
    if len(hidden) == len(state.players):  # everyone has entered: reveal all at once
        return replace(state, hidden=MappingProxyType({}), reveal=tuple(hidden[s] for s in range(len(state.players))))
    return replace(state, hidden=MappingProxyType(hidden))


class Scoreboard(Game):
    id = "scoreboard"
    title = N_("Scoreboard")
    min_players, max_players = 1, 8
    options = {
        "tokens_to_win": Int(1, 1000, required=False),
        "target": Int(-BIG, BIG, required=False),
        # The game the scoreboard keeps, as the table names it, and its
        # BoardGameGeek number: kept in the log for the plays (companion/plays.py).
        "name": Str(NAME_MAX, required=False, check=_shown_name),
        "bgg_id": Int(1, 99_999_999, required=False),
    }
    moves = {
        "add": Move({"seat": Seat(), "points": Int(-BIG, BIG)}, add),
        "token": Move({"seat": Seat(), "delta": Int(-1000, 1000)}, token),
        "secret": Move({"seat": Seat(), "value": Int(-BIG, BIG)}, secret),
    }

    def setup(self, players, options):
        n = len(players)
        return Board(players, (0,) * n, (0,) * n, options["target"], options["tokens_to_win"])

    def is_finished(self, state: Board) -> bool:
        return state.winner is not None

    def is_secret(self, state, action) -> bool:
        return action["type"] == "secret"

    def public_view(self, state: Board) -> dict:
        return {
            "game": self.id,
            "players": list(state.players),
            "scores": list(state.scores),
            "tokens": list(state.tokens),
            "reveal": list(state.reveal) if state.reveal is not None else None,
            "entered": sorted(state.hidden),
            "finished": state.winner is not None,
            "winner": list(state.winner) if state.winner is not None else None,
        }

    def seat_view(self, state, seat, own):
        return {"secret": {"value": own.get(seat)} if own else None}


GAME = Scoreboard()
