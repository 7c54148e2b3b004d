"""Diabolo (rules.md §6): five colours scored round by round.

The companion keeps the totals, the dealer, the doubles and, optionally, the
rows (see :mod:`.diabolo_rows`).  A colour is scored with ``score``: the
players' hand sums in that colour plus the row's heaven and hell sums.

The doubles are our house rule: instead of announcing aloud, every seat
enters its decision for a positive colour secretly (``double``, kept in
``state.hidden`` under ``(colour, seat)``); the decisions are revealed by that
colour's ``score``.  The table scores colour by colour, so decisions are taken
for one colour at a time: while a colour's decisions await its score, a
decision or a score for another colour is refused.  That also stops a seat from
staking its one double on two colours at once.

Refusals are *secret-blind* (replay contract, changed 2026-11-26): whether an
action is accepted, and the words of its refusal, never depend on a decision
not yet revealed.  So a colour with entries is scored without ``doubles`` and
must score positive whatever the entries say (a negative colour with entries
is refused even when every entry says keep: take them back with ``undo``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from ..errors import IllegalActionError, InvalidActionError
from ..fields import Bool, Int, List, Seat, Str
from ..i18n import N_
from .base import Game, Move
from .diabolo_rows import SIDE_MAX, SIDES, Row, place_card, play_ended, row_of

COLOURS = 5          # colours in the game (and colours scored per round)
HAND_MAX = 14 * 5    # a colour has 14 cards of value 1..5: no hand sum can exceed 70
MAX_NAME = 24


@dataclass(frozen=True)
class Board:
    players: tuple[str, ...]
    scores: tuple[int, ...]
    dealer: int
    round: int = 1
    colors: tuple[str, ...] = ()          # the game's colours, in order of first use
    doubles_left: tuple[bool, ...] = ()
    scored: tuple[str, ...] = ()          # colours scored this round, in scoring order
    rows: tuple[Row, ...] = ()            # rows tracked with `place` this round
    turn: int = 0                         # the seat to place next (tracked rounds)
    hidden: Mapping = field(default_factory=lambda: MappingProxyType({}))  # (colour, seat) -> play
    winner: tuple[int, ...] | None = None

    @property
    def tracked(self) -> bool:
        """A round becomes tracked with its first `place`."""
        return bool(self.rows)


def _with(values: tuple, seat: int, value) -> tuple:
    return values[:seat] + (value,) + values[seat + 1:]


def _after(seat: int, n: int) -> int:
    return (seat + 1) % n


def _new_round(state: Board, dealer: int, number: int) -> Board:
    n = len(state.players)
    return replace(state, dealer=dealer, round=number, doubles_left=(True,) * n, scored=(),
                   rows=(), turn=_after(dealer, n), hidden=MappingProxyType({}))


# -- checks shared by the moves ------------------------------------------------

def _use_color(state: Board, color: str) -> Board:
    """Register ``color`` among the game's colours (the first five distinct names)."""
    if color in state.colors:
        return state
    if len(state.colors) >= COLOURS:
        raise IllegalActionError(N_("'{color}' would be a sixth colour: this game's colours are {colors}"),
                                 color=color, colors=", ".join(state.colors))
    return replace(state, colors=state.colors + (color,))


def _not_scored(state: Board, color: str) -> None:
    if color in state.scored:
        raise IllegalActionError(N_("{color} has already been scored in round {round}"),
                                 color=color, round=state.round)


def _pending_color(state: Board) -> str | None:
    """The colour whose secret decisions await its score (keys are public)."""
    for color, _seat in state.hidden:
        return color
    return None


def _no_other_pending(state: Board, color: str) -> None:
    pending = _pending_color(state)
    if pending is not None and pending != color:
        raise IllegalActionError(N_("double decisions for {pending} await its score: score {pending} before {color}"),
                                 pending=pending, color=color)


def _play_ended(state: Board) -> bool:
    return play_ended(state.rows, len(state.players))


# -- moves ---------------------------------------------------------------------

def place(state: Board, action: dict) -> Board:
    seat, color, side, value = action["seat"], action["color"], action["side"], action["value"]
    state = _use_color(state, color)
    if state.scored or state.hidden:
        # Scoring (a score, or the first double decision) closes the play.
        raise IllegalActionError(N_("round {round} is being scored: no more cards can be placed"), round=state.round)
    if _play_ended(state):
        raise IllegalActionError(N_("the play of round {round} has ended: score its colours"), round=state.round)
    if seat != state.turn:
        raise IllegalActionError(N_("it is {turn}'s turn to place a card, not {name}'s"),
                                 turn=state.players[state.turn], name=state.players[seat])
    rows = place_card(state.rows, color, side, value)
    return replace(state, rows=rows, turn=_after(seat, len(state.players)))


def double(state: Board, action: dict) -> Board:
    seat, color = action["seat"], action["color"]
    name = state.players[seat]
    state = _use_color(state, color)
    _not_scored(state, color)
    if not state.doubles_left[seat]:
        raise IllegalActionError(N_("{name} has already played its double in round {round}"),
                                 name=name, round=state.round)
    if (color, seat) in state.hidden:
        raise IllegalActionError(N_("{name} has already entered its double decision for {color}"),
                                 name=name, color=color)
    _no_other_pending(state, color)
    if state.tracked:
        # Every refusal here depends on public facts only, never on the decision.
        if not _play_ended(state):
            raise IllegalActionError(N_("the play of round {round} has not ended: doubles are decided at scoring"),
                                     round=state.round)
        heaven, hell = row_of(state.rows, color).sums()
        if heaven <= hell:
            raise IllegalActionError(N_("{color} is not positive (heaven {heaven}, hell {hell}): doubles are for positive colours only"),
                                     color=color, heaven=heaven, hell=hell)
    hidden = dict(state.hidden)
    hidden[(color, seat)] = action["play"]
    return replace(state, hidden=MappingProxyType(hidden))


def score(state: Board, action: dict) -> Board:
    color, hands = action["color"], action["hands"]
    n = len(state.players)
    state = _use_color(state, color)
    _not_scored(state, color)
    _no_other_pending(state, color)
    heaven, hell = _row_sums(state, color, action["heaven"], action["hell"])
    entries = {seat: play for (c, seat), play in state.hidden.items() if c == color}
    if entries:
        # Secret-blind: with decisions entered, whether this score is accepted
        # (and the words of its refusal) must not depend on what they say, so
        # the checks below read only public facts: that entries exist, and
        # the row's sums.  The entries alone decide who doubles.
        if action["doubles"] is not None:
            raise IllegalActionError(N_("'doubles' cannot be given for {color}: its secret double decisions "
                                        "decide who doubles (score it without 'doubles')"), color=color)
        if heaven <= hell:
            raise IllegalActionError(N_("{color} is not positive (heaven {heaven}, hell {hell}), but it has secret "
                                        "double decisions: take them back with undo first"),
                                     color=color, heaven=heaven, hell=hell)
        doublers = frozenset(s for s, play in entries.items() if play)
    else:
        doublers = _announced(state, action["doubles"])
        if doublers and heaven <= hell:
            raise IllegalActionError(N_("{color} is not positive (heaven {heaven}, hell {hell}): doubles are for positive colours only"),
                                     color=color, heaven=heaven, hell=hell)

    # The highest hand sum takes the colour; ties go to the first seat from the
    # one after the dealer (the dealer comes last).
    order = [(state.dealer + 1 + i) % n for i in range(n)]
    top = max(order, key=lambda s: (hands[s], -order.index(s)))
    scores = state.scores
    if heaven > hell:
        scores = _with(scores, top, scores[top] + hands[top] * (2 if top in doublers else 1))
    elif hell > heaven:
        scores = _with(scores, top, scores[top] - hands[top])
    # Every seat that played its double spends it, whether it scored or not.
    left = tuple(ok and s not in doublers for s, ok in enumerate(state.doubles_left))
    hidden = MappingProxyType({k: v for k, v in state.hidden.items() if k[0] != color})
    state = replace(state, scores=scores, doubles_left=left, scored=state.scored + (color,), hidden=hidden)
    if len(state.scored) < COLOURS:
        return state
    if state.round < n:
        return _new_round(state, _after(state.dealer, n), state.round + 1)
    best = max(scores)
    return replace(state, winner=tuple(s for s in range(n) if scores[s] == best))


def _row_sums(state: Board, color: str, heaven: int | None, hell: int | None) -> tuple[int, int]:
    """The row's heaven and hell sums: from the tracked row, or as given."""
    if not state.tracked:
        if heaven is None or hell is None:
            raise IllegalActionError(N_("round {round} was not tracked with place: give both heaven and hell for {color}"),
                                     round=state.round, color=color)
        return heaven, hell
    if not _play_ended(state):
        raise IllegalActionError(N_("the play of round {round} has not ended: {color} cannot be scored yet"),
                                 round=state.round, color=color)
    row_heaven, row_hell = row_of(state.rows, color).sums()
    if (heaven is not None and heaven != row_heaven) or (hell is not None and hell != row_hell):
        raise IllegalActionError(N_("the {color} row holds heaven {row_heaven} and hell {row_hell}, "
                                    "but the score says heaven {heaven} and hell {hell}"),
                                 color=color, row_heaven=row_heaven, row_hell=row_hell,
                                 heaven="-" if heaven is None else heaven, hell="-" if hell is None else hell)
    return row_heaven, row_hell


def _announced(state: Board, given: tuple[int, ...] | None) -> frozenset[int]:
    """The seats listed in ``doubles`` (doubles announced aloud, no entries)."""
    if given is None:
        return frozenset()
    if len(set(given)) != len(given):
        raise IllegalActionError(N_("'doubles' lists a seat twice"))
    for seat in given:
        if not state.doubles_left[seat]:
            raise IllegalActionError(N_("{name} has already played its double in round {round}"),
                                     name=state.players[seat], round=state.round)
    return frozenset(given)


# -- fields --------------------------------------------------------------------

def _color_name(value, name, ctx):
    if not value.strip():
        raise InvalidActionError(N_("'{name}' must not be empty"), name=name)


def _one_per_seat(value, name, ctx):
    if len(value) != ctx.seats:
        raise InvalidActionError(N_("'{name}' must have {n} entries, got {got}"), name=name, n=ctx.seats, got=len(value))


def _color():
    return Str(max_len=MAX_NAME, check=_color_name)


class Diabolo(Game):
    id = "diabolo"
    title = N_("Diabolo")
    min_players, max_players = 3, 5
    options = {"first_dealer": Seat(required=False, default=0)}
    moves = {
        "place": Move({"seat": Seat(), "color": _color(), "side": Str(choices=SIDES), "value": Int(1, 5)}, place),
        "double": Move({"seat": Seat(), "color": _color(), "play": Bool()}, double),
        "score": Move({
            "color": _color(),
            "hands": List(Int(0, HAND_MAX), check=_one_per_seat),
            "doubles": List(Seat(), required=False),
            "heaven": Int(0, SIDE_MAX, required=False),
            "hell": Int(0, SIDE_MAX, required=False),
        }, score),
    }

    def setup(self, players, options):
        n = len(players)
        board = Board(players, (0,) * n, options["first_dealer"])
        return _new_round(board, options["first_dealer"], 1)

    def is_finished(self, state: Board) -> bool:
        return state.winner is not None

    def is_secret(self, state, action) -> bool:
        return action["type"] == "double"

    def secret_owner(self, key) -> int:
        return key[1]

    def public_view(self, state: Board) -> dict:
        pending = _pending_color(state)
        decided = None
        if pending is not None:
            decided = {"color": pending, "seats": sorted(seat for _c, seat in state.hidden)}
        return {
            "game": self.id,
            "players": list(state.players),
            "scores": list(state.scores),
            "round": state.round,
            "dealer": state.dealer,
            "doubles_left": list(state.doubles_left),
            "scored": list(state.scored),
            "decided": decided,
            # Beyond the contract, for screens: the game's colours, the rows
            # placed this round (all face up on the table) and who places next.
            "colors": list(state.colors),
            "rows": [{"color": r.color, "heaven": list(r.heaven), "hell": list(r.hell)} for r in state.rows],
            "turn": state.turn if state.winner is None else None,
            "finished": state.winner is not None,
            "winner": list(state.winner) if state.winner is not None else None,
        }

    def seat_view(self, state, seat, own):
        # At most one decision is pending per seat (one colour at a time).
        for (color, _seat), play in own.items():
            return {"secret": {"color": color, "play": play}}
        return {"secret": None}


GAME = Diabolo()
