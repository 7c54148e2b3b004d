"""Sloppy Seconds, rules.md §4.

3 or 4 players, a 52-card deck (without the 2 of diamonds with 3 players).
Each card is worth its points (A = 1, 2..10, J = 11, Q = 12, K = 13); per
suit, the players who took the **second** highest total (strictly below the
first) score it, nobody else.  A hand score below 5 counts as 5.

A hand is entered either as per-seat suit totals (``hand``) or trick by
trick (``trick``), in which case the engine follows the trump tracker — the
first suit *broken* (played to a trick led in another suit) can never be
trump, the second different suit broken is trump at once for the rest of the
hand — finds each trick's taker, and scores the hand after the last trick.
Following suit is not checked: the companion scores, it does not referee.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping, NamedTuple

from ..errors import IllegalActionError, InvalidActionError
from ..fields import Int, List, Record, Seat, Str
from ..i18n import N_
from .base import Game, Move

SUITS = "SHDC"                       # spades, hearts, diamonds, clubs
RANKS = {"A": 14, "J": 11, "Q": 12, "K": 13, **{str(v): v for v in range(2, 11)}}
SUIT_POINTS = 91                     # 1 + 2 + ... + 13
REMOVED = "2D"                       # with 3 players (the French seed; the English text says 2C)
MINIMUM = 5                          # a hand score below 5 counts as 5
BIG = 10**6
_CARD = re.compile(r"(A|[2-9]|10|J|Q|K)([SHDC])")


class Card(NamedTuple):
    text: str
    rank: int      # for winning tricks: 2..10, J 11, Q 12, K 13, A 14
    suit: str

    @property
    def points(self) -> int:
        return 1 if self.rank == 14 else self.rank   # an ace ranks high but scores 1


def suit_points(suit: str, seats: int) -> int:
    """What a suit's totals must add up to: 91, or 89 for diamonds with 3 players."""
    return SUIT_POINTS - 2 if (seats == 3 and suit == "D") else SUIT_POINTS


def tricks_per_hand(seats: int) -> int:
    """13 tricks with 4 players, 17 with 3 (51 cards)."""
    return (52 - (seats == 3)) // seats


def parse_card(text: str, seats: int) -> Card:
    match = _CARD.fullmatch(text)
    if match is None:
        shown = text if len(text) <= 12 else text[:9] + "..."
        raise InvalidActionError(N_("unknown card '{card}' (write the rank A, 2-10, J, Q or K then the suit S, H, D or C, e.g. QS or 10H)"),
                                 card=shown)
    if seats == 3 and text == REMOVED:
        raise IllegalActionError(N_("the 2 of diamonds (2D) is not in the deck with 3 players"))
    return Card(text, RANKS[match.group(1)], match.group(2))


def score_hand(totals) -> tuple[int, ...]:
    """Hand scores from per-seat suit totals (each a sequence in SUITS order).

    Per suit the second place is the highest total strictly below the first,
    so players tied for first push the next lower total into second; every
    player at the second total scores it."""
    points = [0] * len(totals)
    for k in range(len(SUITS)):
        column = [t[k] for t in totals]
        below = [v for v in column if v < max(column)]
        if below:
            second = max(below)
            for seat, value in enumerate(column):
                if value == second:
                    points[seat] += value
    return tuple(max(p, MINIMUM) for p in points)


@dataclass(frozen=True)
class Table:
    players: tuple[str, ...]
    target: int
    dealer: int
    scores: tuple[int, ...]
    hands: tuple[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]], ...] = ()  # (points, suit totals)
    # The hand under way, entered trick by trick (empty between hands).
    lead: int | None = None              # seat to lead the next trick
    tricks_played: int = 0
    played: frozenset[str] = frozenset()
    taken: tuple[tuple[int, ...], ...] = ()   # per seat, points taken per suit (SUITS order)
    ineligible: str | None = None        # the first suit broken: never trump this hand
    trump: str | None = None             # the second suit broken
    last_trick: tuple[tuple[str, ...], int, int] | None = None   # (cards, lead seat, winner seat)
    winner: tuple[int, ...] | None = None
    hidden: Mapping = field(default_factory=lambda: MappingProxyType({}))


def _fresh_hand(state: Table, dealer: int) -> Table:
    n = len(state.players)
    return replace(state, dealer=dealer, lead=(dealer + 1) % n, tricks_played=0, played=frozenset(),
                   taken=((0,) * len(SUITS),) * n, ineligible=None, trump=None)


def hand(state: Table, action: dict) -> Table:
    n = len(state.players)
    if state.tricks_played:
        raise IllegalActionError(N_("this hand is being entered trick by trick ({n} tricks so far): finish it with its tricks or undo them"),
                                 n=state.tricks_played)
    rows = action["points"]
    if len(rows) != n:
        raise InvalidActionError(N_("'points' needs one object per seat ({n}), got {got}"), n=n, got=len(rows))
    totals = tuple(tuple(row[s] for s in SUITS) for row in rows)
    for k, suit in enumerate(SUITS):
        got, want = sum(t[k] for t in totals), suit_points(suit, n)
        if got != want:
            raise IllegalActionError(N_("the {suit} totals add up to {got}, not {want}"), suit=suit, got=got, want=want)
    return replace(_score(state, totals), last_trick=None)


def trick(state: Table, action: dict) -> Table:
    n = len(state.players)
    texts = action["cards"]
    if len(texts) != n:
        raise InvalidActionError(N_("a trick has one card per seat ({n}), got {got}"), n=n, got=len(texts))
    cards = [parse_card(t, n) for t in texts]
    seen = set()
    for card in cards:
        if card.text in seen:
            raise IllegalActionError(N_("the card {card} appears twice in this trick"), card=card.text)
        if card.text in state.played:
            raise IllegalActionError(N_("the card {card} was already played this hand"), card=card.text)
        seen.add(card.text)
    led = cards[0].suit
    ineligible, trump = state.ineligible, state.trump
    for card in cards[1:]:
        if card.suit != led:                           # the card breaks its suit
            if ineligible is None:
                ineligible = card.suit
            elif trump is None and card.suit != ineligible:
                trump = card.suit                      # trump at once, in this very trick
    pool = [c for c in cards if c.suit == trump] or [c for c in cards if c.suit == led]
    best = max(pool, key=lambda c: c.rank)
    winner = (state.lead + cards.index(best)) % n
    row = list(state.taken[winner])
    for card in cards:
        row[SUITS.index(card.suit)] += card.points
    taken = state.taken[:winner] + (tuple(row),) + state.taken[winner + 1:]
    after = replace(state, lead=winner, tricks_played=state.tricks_played + 1, played=state.played | seen,
                    taken=taken, ineligible=ineligible, trump=trump,
                    last_trick=(tuple(texts), state.lead, winner))
    if after.tricks_played == tricks_per_hand(n):
        return _score(after, taken)
    return after


def _score(state: Table, totals) -> Table:
    """Score a hand from its suit totals; start the next hand or end the game."""
    n = len(state.players)
    points = score_hand(totals)
    scores = tuple(a + b for a, b in zip(state.scores, points))
    state = replace(state, scores=scores, hands=state.hands + ((points, tuple(totals)),))
    best = max(scores)
    if best >= state.target and scores.count(best) == 1:
        # The game is over: the dealer stays the last hand's; nobody leads.
        return replace(_fresh_hand(state, state.dealer), lead=None, winner=(scores.index(best),))
    return _fresh_hand(state, (state.dealer + 1) % n)


class SloppySeconds(Game):
    id = "sloppy-seconds"
    title = N_("Sloppy Seconds")
    min_players, max_players = 3, 4
    options = {
        "target": Int(1, BIG, required=False, default=300),
        "first_dealer": Seat(required=False, default=0),
    }
    moves = {
        "hand": Move({"points": List(Record({s: Int(0, SUIT_POINTS) for s in SUITS}))}, hand),
        "trick": Move({"cards": List(Str())}, trick),
    }

    def setup(self, players, options):
        n = len(players)
        return _fresh_hand(Table(players, options["target"], options["first_dealer"], (0,) * n),
                           options["first_dealer"])

    def is_finished(self, state: Table) -> bool:
        return state.winner is not None

    def public_view(self, state: Table) -> dict:
        last = None
        if state.last_trick is not None:
            cards, lead, winner = state.last_trick
            last = {"cards": list(cards), "lead": lead, "winner": winner}
        return {
            "game": self.id,
            "players": list(state.players),
            "scores": list(state.scores),
            "dealer": state.dealer,
            "hands": [{"points": list(p), "totals": [dict(zip(SUITS, t)) for t in totals]}
                      for p, totals in state.hands],
            "trump": state.trump,
            "ineligible": state.ineligible,
            "lead": state.lead,
            "tricks_played": state.tricks_played,
            "taken": [dict(zip(SUITS, t)) for t in state.taken],
            "last_trick": last,
            "finished": state.winner is not None,
            "winner": list(state.winner) if state.winner is not None else None,
        }


GAME = SloppySeconds()
