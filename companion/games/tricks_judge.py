"""The Costly Tricks trick judge: trump displacement inside one trick (rules.md §2).

A pure function of the four cards in play order.  Besides the winner it
returns its reasoning, one :class:`Step` per card, so a phone page can say
*why* a trick went where it did ("blue 3 makes blue trump; black 10 makes
black trump, displacing blue; blue 6 is a discard") — the trump rule is the
one players argue about at the table.

The rule, card by card after the lead:

* a card of the led suit **follows**;
* a card of the trump standing now is a **trump**;
* a card of a suit that was trump earlier in this trick and was displaced is
  a **discard**: a displaced suit can never be trump again in that trick;
* any other card makes its suit the new trump, displacing the previous one.

The trick goes to the highest card of the standing trump if there is one,
else to the highest card of the led suit.  Trumps are forgotten between tricks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..i18n import N_

Card = tuple[str, int]          # (suit, value 0..10); the suit is any name

LEAD, FOLLOW, TRUMP, DISCARD = "lead", "follow", "trump", "discard"


@dataclass(frozen=True)
class Step:
    """What one card did in the trick."""

    card: Card
    role: str                    # LEAD, FOLLOW, TRUMP or DISCARD
    displaces: str | None = None  # a new trump: the suit it displaced, if any
    new_trump: bool = False      # True when this card made its suit trump

    def as_json(self) -> dict:
        return {"card": [self.card[0], self.card[1]], "role": self.role,
                "displaces": self.displaces, "new_trump": self.new_trump}


@dataclass(frozen=True)
class Judgement:
    """The judge's verdict on one trick."""

    cards: tuple[Card, ...]
    steps: tuple[Step, ...]
    winner: int                  # position in play order, 0 = the lead
    trump: str | None            # the trump standing at the end of the trick

    @property
    def points(self) -> int:
        return sum(value for _, value in self.cards)

    def phrases(self) -> list[tuple[str, dict]]:
        """The reasoning as (template, params) pairs, templates marked for
        translation: a screen can render them in the player's language."""
        out = []
        for step in self.steps:
            card = card_text(step.card)
            suit = step.card[0]
            if step.role == LEAD:
                out.append((N_("{card} led"), {"card": card}))
            elif step.role == FOLLOW:
                out.append((N_("{card} follows"), {"card": card}))
            elif step.role == DISCARD:
                out.append((N_("{card} is a discard ({suit} was displaced)"), {"card": card, "suit": suit}))
            elif step.displaces is not None:
                out.append((N_("{card} makes {suit} trump, displacing {old}"),
                            {"card": card, "suit": suit, "old": step.displaces}))
            elif step.new_trump:
                out.append((N_("{card} makes {suit} trump"), {"card": card, "suit": suit}))
            else:
                out.append((N_("{card} is a trump"), {"card": card}))
        out.append((N_("{card} wins"), {"card": card_text(self.cards[self.winner])}))
        return out

    def summary(self, translate: Callable[[str], str] | None = None) -> str:
        """One line, e.g. "red 5 led; blue 3 makes blue trump; ...; black 10 wins"."""
        parts = []
        for template, params in self.phrases():
            text = translate(template) if translate else template
            parts.append(text.format(**params))
        return "; ".join(parts)

    def as_json(self) -> dict:
        return {"steps": [s.as_json() for s in self.steps], "winner": self.winner,
                "trump": self.trump, "points": self.points, "summary": self.summary()}


def card_text(card: Card) -> str:
    return f"{card[0]} {card[1]}"


def judge(cards: Sequence[Card]) -> Judgement:
    """Judge one trick: ``cards`` in play order from the lead (at least one)."""
    cards = tuple((suit, value) for suit, value in cards)
    led = cards[0][0]
    trump: str | None = None
    displaced: set[str] = set()
    steps = [Step(cards[0], LEAD)]
    for card in cards[1:]:
        suit = card[0]
        if suit == led:
            steps.append(Step(card, FOLLOW))
        elif suit == trump:
            steps.append(Step(card, TRUMP))
        elif suit in displaced:
            steps.append(Step(card, DISCARD))
        else:
            if trump is not None:
                displaced.add(trump)
            steps.append(Step(card, TRUMP, displaces=trump, new_trump=True))
            trump = suit
    # With a trump standing, only trumps can win; else the led suit does.
    # Values are unique within a suit in a real trick; on a tie the first wins.
    pool = trump if trump is not None else led
    winner = max((i for i, c in enumerate(cards) if c[0] == pool), key=lambda i: cards[i][1])
    return Judgement(cards, tuple(steps), winner, trump)
