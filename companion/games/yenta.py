"""Yenta (rules.md §5): a liar's-dice fishing game with an open auction.

The companion never sees the dice: it counts them.  Each seat starts a hand
with five; a hit removes one die from the asker and one from the target (the
pair leaves the game and scores twice its value for the asker), a miss costs
the asker the die it tried to pair.  When a single seat still holds dice it
shows them with ``last`` and adds their values; then the bid is settled.

Dice are conserved and the state proves it: at every moment
``sum(dice) + paired + sum(discarded) == 5 * players``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from ..errors import IllegalActionError
from ..fields import Bool, Int, List, Seat
from ..i18n import N_
from .base import Game, Move

DICE = 5                 # dice per seat at the start of each hand
BIG = 10**6              # upper bound for bids and the target (a sanity limit)


@dataclass(frozen=True)
class Hand:
    """One settled hand, as replay.md's ``hands`` entries."""

    bidder: int
    bid: int
    points: tuple[int, ...]
    delta: tuple[int, ...]


@dataclass(frozen=True)
class Table:
    players: tuple[str, ...]
    target: int
    scores: tuple[int, ...]
    # -- the hand under way ---------------------------------------------------
    dice: tuple[int, ...]            # dice still held per seat
    hand_points: tuple[int, ...]
    discarded: tuple[int, ...]       # dice lost on a miss, per seat
    paired: int = 0                  # dice removed in pairs (two per hit)
    bidder: int | None = None
    bid: int | None = None
    turn: int | None = None          # the seat to ask or pass, or the seat owing its `last`
    # -- the game ---------------------------------------------------------------
    hands: tuple[Hand, ...] = ()
    winner: tuple[int, ...] | None = None
    hidden: Mapping = field(default_factory=lambda: MappingProxyType({}))  # Yenta has no secrets


def _with(values: tuple, seat: int, value) -> tuple:
    return values[:seat] + (value,) + values[seat + 1:]


def _holders(state: Table) -> list[int]:
    """Seats that still hold dice, in seat order."""
    return [s for s, n in enumerate(state.dice) if n > 0]


def _next_holder(state: Table, seat: int) -> int:
    """The next seat after ``seat`` that still holds dice (``seat`` itself last)."""
    n = len(state.players)
    for step in range(1, n + 1):
        candidate = (seat + step) % n
        if state.dice[candidate] > 0:
            return candidate
    raise AssertionError("nobody holds dice")  # callers check first


def _fresh_hand(state: Table, **changes) -> Table:
    n = len(state.players)
    return replace(state, dice=(DICE,) * n, hand_points=(0,) * n, discarded=(0,) * n,
                   paired=0, bidder=None, bid=None, turn=None, **changes)


# -- checks shared by the moves ----------------------------------------------

def _need_bid(state: Table) -> None:
    if state.bidder is None:
        raise IllegalActionError(N_("no bid yet: the hand starts with the winning bid"))


def _need_play(state: Table, seat: int) -> None:
    """The checks of `ask` and `pass`: a bid, two seats with dice, the right seat."""
    _need_bid(state)
    holders = _holders(state)
    if len(holders) < 2:
        raise IllegalActionError(N_("only {name} still has dice: the hand waits for its last dice"),
                                 name=state.players[holders[0]])
    if seat != state.turn:
        raise IllegalActionError(N_("it is {turn}'s turn, not {name}'s"),
                                 turn=state.players[state.turn], name=state.players[seat])


# -- moves ---------------------------------------------------------------------

def bid(state: Table, action: dict) -> Table:
    seat = action["seat"]
    if state.bidder is not None:
        raise IllegalActionError(N_("this hand already has its bid ({name} bid {amount}): a second bid is not allowed"),
                                 name=state.players[state.bidder], amount=state.bid)
    # The auction itself happens aloud; the companion records its winner, who plays first.
    return replace(state, bidder=seat, bid=action["amount"], turn=seat)


def ask(state: Table, action: dict) -> Table:
    seat, target, value = action["seat"], action["target"], action["value"]
    _need_play(state, seat)
    if target == seat:
        raise IllegalActionError(N_("{name} cannot ask itself"), name=state.players[seat])
    if state.dice[target] == 0:
        raise IllegalActionError(N_("{target} has no dice left: {name} must ask someone who still has dice"),
                                 target=state.players[target], name=state.players[seat])
    if action["hit"]:
        # The pair leaves the game: one die from each, twice the value to the asker.
        dice = _with(state.dice, seat, state.dice[seat] - 1)
        dice = _with(dice, target, dice[target] - 1)
        points = _with(state.hand_points, seat, state.hand_points[seat] + 2 * value)
        state = replace(state, dice=dice, hand_points=points, paired=state.paired + 2)
        if not any(dice):
            return _settle(state)           # the hit used the last dice: the hand ends at once
        # The asker goes on, unless it just paired its last die.
        turn = seat if dice[seat] > 0 else _next_holder(state, seat)
    else:
        # A miss: the asker discards the die it tried to pair; the turn passes.
        dice = _with(state.dice, seat, state.dice[seat] - 1)
        discarded = _with(state.discarded, seat, state.discarded[seat] + 1)
        state = replace(state, dice=dice, discarded=discarded)
        turn = _next_holder(state, seat)
    return _wait_for_last(replace(state, turn=turn))


def pass_(state: Table, action: dict) -> Table:
    seat = action["seat"]
    _need_play(state, seat)
    return replace(state, turn=_next_holder(state, seat))


def last(state: Table, action: dict) -> Table:
    seat, dice = action["seat"], action["dice"]
    _need_bid(state)
    holders = _holders(state)
    if len(holders) != 1:
        raise IllegalActionError(N_("{n} seats still have dice: the hand is not over yet"), n=len(holders))
    if holders[0] != seat:
        raise IllegalActionError(N_("{name} has no dice left: only {last} shows its last dice"),
                                 name=state.players[seat], last=state.players[holders[0]])
    if len(dice) != state.dice[seat]:
        raise IllegalActionError(N_("{name} has {n} dice left, but {got} values were given"),
                                 name=state.players[seat], n=state.dice[seat], got=len(dice))
    # The last dice stay in front of their owner: they score, they are not removed.
    points = _with(state.hand_points, seat, state.hand_points[seat] + sum(dice))
    return _settle(replace(state, hand_points=points))


def _wait_for_last(state: Table) -> Table:
    """When one seat alone holds dice, the hand waits for that seat's `last`."""
    holders = _holders(state)
    if len(holders) == 1:
        return replace(state, turn=holders[0])
    return state


def _settle(state: Table) -> Table:
    """Score the hand: the bidder makes its bid or loses it; everyone else
    scores its hand points.  Then a new hand, or the end of the game."""
    bidder, amount = state.bidder, state.bid
    delta = list(state.hand_points)
    made = state.hand_points[bidder] >= amount
    delta[bidder] = max(2 * amount, state.hand_points[bidder]) if made else -amount
    scores = tuple(s + d for s, d in zip(state.scores, delta))
    hands = state.hands + (Hand(bidder, amount, state.hand_points, tuple(delta)),)
    best = max(scores)
    if best >= state.target and scores.count(best) == 1:
        # The game is over: every key stays as it ended, but nobody plays next.
        return replace(state, scores=scores, hands=hands, turn=None, winner=(scores.index(best),))
    # A tie at the top (or nobody at the target): the next hand starts at once.
    return _fresh_hand(state, scores=scores, hands=hands)


class Yenta(Game):
    id = "yenta"
    title = N_("Yenta")
    min_players, max_players = 3, 6
    options = {"target": Int(1, BIG, required=False, default=100)}
    moves = {
        "bid": Move({"seat": Seat(), "amount": Int(0, BIG)}, bid),
        "ask": Move({"seat": Seat(), "target": Seat(), "value": Int(1, 6), "hit": Bool()}, ask),
        "pass": Move({"seat": Seat()}, pass_),
        "last": Move({"seat": Seat(), "dice": List(Int(1, 6))}, last),
    }

    def setup(self, players, options):
        n = len(players)
        return Table(players, options["target"], (0,) * n, (DICE,) * n, (0,) * n, (0,) * n)

    def is_finished(self, state: Table) -> bool:
        return state.winner is not None

    def public_view(self, state: Table) -> dict:
        return {
            "game": self.id,
            "players": list(state.players),
            "scores": list(state.scores),
            "hand_points": list(state.hand_points),
            "dice": list(state.dice),
            "turn": state.turn,
            "bidder": state.bidder,
            "bid": state.bid,
            "hands": [{"bidder": h.bidder, "bid": h.bid, "points": list(h.points), "delta": list(h.delta)}
                      for h in state.hands],
            "finished": state.winner is not None,
            "winner": list(state.winner) if state.winner is not None else None,
        }

    def seat_view(self, state, seat, own):
        return {}


GAME = Yenta()
