"""Paradox — The Third Man (rules.md §1): four players bid cards 0–9.

A **bid**: the lead shows one card face up (public at once, it leaves the
hand), then the three other seats enter a card secretly; when the third one
is in, all four are revealed and scored together.  A **round** is a series of
scored bids that ends at ±20 or after the 9th scored bid and gives one token;
the **match** ends when a seat holds ``tokens_to_win`` tokens.

The two pure helpers :func:`score_bid` and :func:`leader` are the rules'
arithmetic; other layers (the OLED, the phone page) use them too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping, Sequence

from ..errors import GameOver, IllegalActionError
from ..fields import Int, Seat
from ..i18n import N_
from .base import Game, Move

SEATS = 4
FULL_HAND = tuple(range(10))      # every seat holds 0..9 when a round starts
BIDS_PER_ROUND = 9                # the last card of each hand is never played
ROUND_LIMIT = 20                  # a round ends at +20 or more, or -20 or less

# Position counter of score_bid: where the next group of equal cards stands.
FIRST, SECOND, THIRD, FOURTH = 1, 2, 3, 4


# -- the rules' arithmetic ----------------------------------------------------

def score_bid(cards: Sequence[int]) -> list[int] | None:
    """The points each card scores, in the order given, or None when the bid
    is annulled (a value shown by 3 or 4 players).

    Equal values form groups, walked from the highest value down: at first a
    single scores ``10 - c`` and a pair ``5 - c`` each (a pair skips second);
    at second a single or a pair scores ``-c`` (a pair skips third); at third
    a single or a pair scores ``2 * c``; the fourth scores 0.
    """
    groups = Counter(cards)
    if max(groups.values()) >= 3:
        return None
    gain_of: dict[int, int] = {}
    place = FIRST
    for value in sorted(groups, reverse=True):
        pair = groups[value] == 2
        if place == FIRST:
            gain_of[value] = 5 - value if pair else 10 - value
            place = THIRD if pair else SECOND
        elif place == SECOND:
            gain_of[value] = -value
            place = FOURTH if pair else THIRD
        elif place == THIRD:
            gain_of[value] = 2 * value
            place = FOURTH
        else:
            gain_of[value] = 0
    return [gain_of[c] for c in cards]


def leader(scores: Sequence[int], gains: Sequence[int], from_seat: int) -> int:
    """The seat in the lead: the highest score; among equals the one who
    gained most in the last scored bid; among those the first in play order
    starting at ``from_seat`` (inclusive)."""
    n = len(scores)
    best = max(scores)
    tied = [s for s in range(n) if scores[s] == best]
    top_gain = max(gains[s] for s in tied)
    tied = [s for s in tied if gains[s] == top_gain]
    return min(tied, key=lambda s: (s - from_seat) % n)


# -- the state ----------------------------------------------------------------

@dataclass(frozen=True)
class Resolved:
    """A revealed bid: the four cards and points in seat order."""

    cards: tuple[int, ...]
    points: tuple[int, ...]
    annulled: bool


@dataclass(frozen=True)
class RoundResult:
    """A completed round: its final scores and the seat that took the token."""

    scores: tuple[int, ...]
    token: int


@dataclass(frozen=True)
class Match:
    players: tuple[str, ...]
    tokens_to_win: int
    scores: tuple[int, ...]                      # current round
    tokens: tuple[int, ...]
    round: int                                   # 1-based
    bids: int                                    # scored bids this round
    lead: int | None                             # None once the match is over
    hands: tuple[tuple[int, ...], ...]           # ascending; secret cards stay until the reveal
    last: Resolved | None = None
    rounds: tuple[RoundResult, ...] = ()
    lead_card: int | None = None                 # the lead's face-up card of the bid under way
    hidden: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    winner: tuple[int, ...] | None = None


_NO_SECRETS: Mapping[int, int] = MappingProxyType({})


def _with(values: tuple, seat: int, value) -> tuple:
    return values[:seat] + (value,) + values[seat + 1:]


def _without(hand: tuple[int, ...], card: int) -> tuple[int, ...]:
    return tuple(c for c in hand if c != card)


# -- the move -----------------------------------------------------------------

def bid(state: Match, action: dict) -> Match:
    """One card of the bid under way: the lead's (public) or another seat's (secret)."""
    if state.winner is not None:     # the timeline refuses this first; kept for direct callers
        raise GameOver()
    seat, card = action["seat"], action["card"]
    name = state.players[seat]
    if state.lead_card is None:
        if seat != state.lead:
            raise IllegalActionError(N_("{name} cannot bid yet: {lead} leads this bid and shows a card first"),
                                     name=name, lead=state.players[state.lead])
        if card not in state.hands[seat]:
            # the lead's card is public, so naming it reveals nothing
            raise IllegalActionError(N_("{name} has already played the {card} this round"), name=name, card=card)
        return replace(state, lead_card=card, hands=_with(state.hands, seat, _without(state.hands[seat], card)))

    # A bid is under way: a secret card.  No message below may name it.
    if seat == state.lead:
        raise IllegalActionError(N_("{name} has already shown the {card} in this bid"),
                                 name=name, card=state.lead_card)
    if seat in state.hidden:
        raise IllegalActionError(N_("{name} has already entered a card in this bid"), name=name)
    if card not in state.hands[seat]:
        raise IllegalActionError(N_("{name} no longer holds that card this round"), name=name)
    hidden = dict(state.hidden)
    hidden[seat] = card
    if len(hidden) < SEATS - 1:
        return replace(state, hidden=MappingProxyType(hidden))
    hidden[state.lead] = state.lead_card
    return _reveal(state, tuple(hidden[s] for s in range(SEATS)))


def _reveal(state: Match, cards: tuple[int, ...]) -> Match:
    """All four cards are in: score the bid, and end the round/match if due."""
    lead = state.lead
    between_bids = dict(lead_card=None, hidden=_NO_SECRETS)
    points = score_bid(cards)
    if points is None:
        # Annulled: every card goes back (the secret ones never left), same lead again.
        hands = _with(state.hands, lead, tuple(sorted(state.hands[lead] + (cards[lead],))))
        return replace(state, hands=hands, last=Resolved(cards, (0,) * SEATS, True), **between_bids)

    gains = tuple(points)
    scores = tuple(s + g for s, g in zip(state.scores, gains))
    hands = tuple(_without(hand, cards[s]) for s, hand in enumerate(state.hands))
    bids = state.bids + 1
    state = replace(state, scores=scores, hands=hands, bids=bids,
                    last=Resolved(cards, gains, False), lead=leader(scores, gains, lead), **between_bids)
    if bids < BIDS_PER_ROUND and all(-ROUND_LIMIT < s < ROUND_LIMIT for s in scores):
        return state

    # The round is over: its single token goes to the leader.
    token = leader(scores, gains, lead)
    tokens = _with(state.tokens, token, state.tokens[token] + 1)
    rounds = state.rounds + (RoundResult(scores, token),)
    if tokens[token] >= state.tokens_to_win:
        # Everything stays as it ended, except who leads next.
        return replace(state, tokens=tokens, rounds=rounds, lead=None, winner=(token,))
    # A new round starts at once, led by who progressed most in the last bid.
    return replace(state, tokens=tokens, rounds=rounds, round=state.round + 1, bids=0,
                   scores=(0,) * SEATS, hands=(FULL_HAND,) * SEATS,
                   lead=leader((0,) * SEATS, gains, lead))


# -- the declaration ------------------------------------------------------------

class ThirdMan(Game):
    id = "third-man"
    title = N_("The Third Man")
    min_players = max_players = SEATS
    options = {
        "first_lead": Seat(required=False, default=0),
        "tokens_to_win": Int(1, required=False, default=3),
    }
    moves = {
        "bid": Move({"seat": Seat(), "card": Int(0, 9)}, bid),
    }

    def setup(self, players, options):
        return Match(players=players, tokens_to_win=options["tokens_to_win"],
                     scores=(0,) * SEATS, tokens=(0,) * SEATS, round=1, bids=0,
                     lead=options["first_lead"], hands=(FULL_HAND,) * SEATS)

    def is_finished(self, state: Match) -> bool:
        return state.winner is not None

    def is_secret(self, state: Match, action: dict) -> bool:
        # Every bid but the lead's is secret (a bid refused before the lead's
        # card counts as secret too: nothing about it is shown).
        return action["type"] == "bid" and action["seat"] != state.lead

    def public_view(self, state: Match) -> dict:
        entered = set(state.hidden)          # keys only: Sealed refuses values
        if state.lead_card is not None:
            entered.add(state.lead)
        last = state.last
        return {
            "game": self.id,
            "players": list(state.players),
            "scores": list(state.scores),
            "tokens": list(state.tokens),
            "round": state.round,
            "bids": state.bids,
            "lead": state.lead,
            "hands": [list(hand) for hand in state.hands],
            "last": None if last is None else {
                "cards": list(last.cards), "points": list(last.points), "annulled": last.annulled},
            "rounds": [{"scores": list(r.scores), "token": r.token} for r in state.rounds],
            "pending": {"lead_card": state.lead_card, "entered": sorted(entered)},
            "finished": state.winner is not None,
            "winner": list(state.winner) if state.winner is not None else None,
        }

    def seat_view(self, state: Match, seat: int, own: Mapping) -> dict:
        # The lead's "locked" card is its public face-up card; any other
        # seat's is its own secret entry.  Nothing about other seats' secrets.
        if seat == state.lead and state.lead_card is not None:
            locked = state.lead_card
        else:
            locked = own.get(seat)
        return {"locked": locked, "hand": list(state.hands[seat])}


GAME = ThirdMan()
