"""Paradox — Costly Tricks (Chères Levées), rules.md §2.

Two players, each with a dummy: four seats in play order (0 = first player,
1 = second player, 2 = first player's dummy, 3 = second player's dummy), and
seat ``s`` plays for side ``s % 2``.  ``players``, ``scores``, ``tokens``,
``tricks`` and the match ``winner`` are per side (2 entries); ``lead`` and a
trick's winner are seats 0..3.

A hand is 11 tricks.  Every trick costs its taker 20 points and brings the
values of its cards; the 44 cards sum to 220 = 11 x 20, so the two sides'
hand totals always add up to 0, and the side whose total is positive takes
the hand's token.  Tricks are entered quick (winner seat + point sum) or full
(the four cards, judged by :mod:`.tricks_judge`); both kinds may be mixed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from ..errors import IllegalActionError, InvalidActionError
from ..fields import Any_, Field, Int, List, Str
from ..i18n import N_
from .base import Game, Move
from .tricks_judge import Card, Judgement, card_text, judge

SEATS = 4                 # two players and their dummies
TRICKS_PER_HAND = 11
TRICK_COST = 20
HAND_POINTS = TRICKS_PER_HAND * TRICK_COST   # 220: the 44 cards 0..10 in 4 suits
MAX_SUITS = 4
MAX_SUIT_NAME = 24


def side(seat: int) -> int:
    """The player a seat plays for: seats 0 and 2 are side 0, 1 and 3 side 1."""
    return seat % 2


class CardField(Field):
    """A full-entry card: ``[SUIT, VALUE]``, a suit name and a value 0..10."""

    _pair = List(Any_(), min_len=2, max_len=2)
    _suit = Str(max_len=MAX_SUIT_NAME)
    _value = Int(0, 10)

    def convert(self, value, name, ctx) -> Card:
        suit, number = self._pair.convert(value, name, ctx)
        suit = self._suit.check(suit, f"{name} suit", ctx)
        if not suit.strip():
            raise InvalidActionError(N_("'{name}' has an empty suit name"), name=name)
        return suit, self._value.check(number, f"{name} value", ctx)


@dataclass(frozen=True)
class LastTrick:
    """The latest full-entry trick, kept so a screen can explain it."""

    seats: tuple[int, ...]       # who played each card, in play order
    judgement: Judgement

    def as_json(self) -> dict:
        out = self.judgement.as_json()
        out["cards"] = [[s, v] for s, v in self.judgement.cards]
        out["seats"] = list(self.seats)
        out["winner"] = self.seats[self.judgement.winner]
        for step, seat in zip(out["steps"], self.seats):
            step["seat"] = seat
        return out


@dataclass(frozen=True)
class Match:
    players: tuple[str, str]
    hands_to_win: int
    tokens: tuple[int, int] = (0, 0)
    hands: tuple[tuple[tuple[int, int], tuple[int, int], int | None], ...] = ()
    # The hand under way; lead is None between hands (not dealt yet).
    lead: int | None = None
    tricks: tuple[int, int] = (0, 0)           # tricks taken per side
    taken: tuple[int, int] = (0, 0)            # card points taken per side
    played: Mapping[Card, int] = field(default_factory=lambda: MappingProxyType({}))  # card -> trick no.
    suits: tuple[str, ...] = ()                # suits seen in full entry, first-seen order
    last_trick: LastTrick | None = None
    winner: tuple[int, ...] | None = None
    hidden: Mapping = field(default_factory=lambda: MappingProxyType({}))

    @property
    def scores(self) -> tuple[int, int]:
        return tuple(p - TRICK_COST * t for p, t in zip(self.taken, self.tricks))

    @property
    def tricks_played(self) -> int:
        return sum(self.tricks)


def deal(state: Match, action: dict) -> Match:
    if state.lead is not None:
        raise IllegalActionError(N_("the hand is under way ({n} of 11 tricks entered): a new deal comes after its 11th trick"),
                                 n=state.tricks_played)
    return replace(state, lead=action["lead"], tricks=(0, 0), taken=(0, 0),
                   played=MappingProxyType({}), suits=(), last_trick=None)


def trick(state: Match, action: dict) -> Match:
    cards, winner, points = action["cards"], action["winner"], action["points"]
    # One action type, two shapes: exactly one of them must be given.
    if cards is not None and (winner is not None or points is not None):
        raise InvalidActionError(N_("a trick is entered either with 'cards' or with 'winner' and 'points', not both"))
    if cards is None and (winner is None or points is None):
        if winner is None and points is None:
            raise InvalidActionError(N_("a trick needs 'cards' (full entry) or 'winner' and 'points' (quick entry)"))
        raise InvalidActionError(N_("a quick trick needs both 'winner' and 'points'"))
    if state.lead is None:
        raise IllegalActionError(N_("the hand is not dealt yet: enter 'deal' with the seat holding the red 0 first"))
    number = state.tricks_played + 1
    last = None
    if cards is not None:
        winner, points, last, state = _judge_full(state, cards, number)
    total = sum(state.taken) + points
    if total > HAND_POINTS:
        raise IllegalActionError(N_("trick {n} brings the hand's trick points to {total}, more than 220: a trick's points are wrong"),
                                 n=number, total=total)
    if number == TRICKS_PER_HAND and total != HAND_POINTS:
        raise IllegalActionError(N_("the 11 tricks' points add up to {total}, not 220: a trick's points are wrong"),
                                 total=total)
    s = side(winner)
    tricks = _add(state.tricks, s, 1)
    taken = _add(state.taken, s, points)
    state = replace(state, tricks=tricks, taken=taken, lead=winner, last_trick=last)
    if number == TRICKS_PER_HAND:
        return _end_hand(state)
    return state


def _judge_full(state: Match, cards: tuple[Card, ...], number: int):
    """Check the four cards against the hand so far and judge the trick."""
    played = dict(state.played)
    suits = list(state.suits)
    for card in cards:
        if card in played:
            if played[card] == number:
                raise IllegalActionError(N_("the card {card} appears twice in this trick"), card=card_text(card))
            raise IllegalActionError(N_("the card {card} was already played this hand (trick {n})"),
                                     card=card_text(card), n=played[card])
        if card[0] not in suits:
            if len(suits) == MAX_SUITS:
                raise IllegalActionError(N_("'{suit}' would be a fifth suit: this hand already uses {suits}"),
                                         suit=card[0], suits=", ".join(suits))
            suits.append(card[0])
        played[card] = number
    verdict = judge(cards)
    seats = tuple((state.lead + i) % SEATS for i in range(SEATS))
    winner = seats[verdict.winner]
    new = replace(state, played=MappingProxyType(played), suits=tuple(suits))
    return winner, verdict.points, LastTrick(seats, verdict), new


def _end_hand(state: Match) -> Match:
    """Score the hand just completed; start the next one or end the match."""
    scores = state.scores
    token = next((s for s in (0, 1) if scores[s] > 0), None)   # at 0 - 0 nobody
    tokens = state.tokens if token is None else _add(state.tokens, token, 1)
    hands = state.hands + ((state.tricks, scores, token),)
    if token is not None and tokens[token] >= state.hands_to_win:
        # Match over: the last hand's scores and tricks stay as they ended.
        return replace(state, tokens=tokens, hands=hands, lead=None, winner=(token,))
    return replace(state, tokens=tokens, hands=hands, lead=None, tricks=(0, 0), taken=(0, 0),
                   played=MappingProxyType({}), suits=())


def _add(pair: tuple[int, int], index: int, amount: int) -> tuple[int, int]:
    return tuple(v + amount if i == index else v for i, v in enumerate(pair))


class CostlyTricks(Game):
    id = "costly-tricks"
    title = N_("Costly Tricks")
    min_players, max_players = 2, 2
    options = {"hands_to_win": Int(1, 99, required=False, default=3)}
    moves = {
        # Seats run 0..3 although the table has 2 players: Seat() would stop at 1.
        "deal": Move({"lead": Int(0, SEATS - 1)}, deal),
        "trick": Move({
            "winner": Int(0, SEATS - 1, required=False),
            "points": Int(0, 40, required=False),
            "cards": List(CardField(), min_len=SEATS, max_len=SEATS, required=False),
        }, trick),
    }

    def setup(self, players, options):
        return Match(players, options["hands_to_win"])

    def is_finished(self, state: Match) -> bool:
        return state.winner is not None

    def public_view(self, state: Match) -> dict:
        return {
            "game": self.id,
            "players": list(state.players),
            "scores": list(state.scores),
            "tokens": list(state.tokens),
            "tricks": list(state.tricks),
            "lead": state.lead,
            "hands": [{"tricks": list(t), "points": list(p), "token": tok} for t, p, tok in state.hands],
            "last_trick": state.last_trick.as_json() if state.last_trick is not None else None,
            "finished": state.winner is not None,
            "winner": list(state.winner) if state.winner is not None else None,
        }


GAME = CostlyTricks()
