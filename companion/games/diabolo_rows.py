"""Diabolo's optional row tracking (rules.md §6, "Placing").

Each colour has a row with a heaven (positive) side and a hell (negative)
side.  A row holds at most five cards, at most three on one side, and is
closed at five; the round's play ends when two rows are closed (three with
five players).  Rows are kept as a tuple of :class:`Row`, one per colour that
received a card this round, so the state stays an immutable value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import IllegalActionError
from ..i18n import N_

ROW_CARDS = 5       # a row is closed at five cards
SIDE_CARDS = 3      # at most three cards on one side of a row
SIDE_MAX = SIDE_CARDS * 5   # the largest possible side sum (three 5s)
SIDES = ("heaven", "hell")


@dataclass(frozen=True)
class Row:
    color: str
    heaven: tuple[int, ...] = ()
    hell: tuple[int, ...] = ()

    @property
    def cards(self) -> int:
        return len(self.heaven) + len(self.hell)

    @property
    def closed(self) -> bool:
        return self.cards >= ROW_CARDS

    def side(self, side: str) -> tuple[int, ...]:
        return self.heaven if side == "heaven" else self.hell

    def sums(self) -> tuple[int, int]:
        return sum(self.heaven), sum(self.hell)


def closed_rows_to_end(players: int) -> int:
    """How many closed rows end the round's play: 2, or 3 with five players."""
    return 3 if players == 5 else 2


def row_of(rows: tuple[Row, ...], color: str) -> Row:
    """The tracked row of ``color`` (an untouched row is empty: 0 / 0)."""
    for row in rows:
        if row.color == color:
            return row
    return Row(color)


def play_ended(rows: tuple[Row, ...], players: int) -> bool:
    return sum(row.closed for row in rows) >= closed_rows_to_end(players)


def place_card(rows: tuple[Row, ...], color: str, side: str, value: int) -> tuple[Row, ...]:
    """``rows`` with one more card, or an IllegalActionError for a full row or side."""
    row = row_of(rows, color)
    if row.closed:
        raise IllegalActionError(N_("the {color} row already holds {n} cards: it is closed"),
                                 color=color, n=ROW_CARDS)
    if len(row.side(side)) >= SIDE_CARDS:
        other = "hell" if side == "heaven" else "heaven"
        raise IllegalActionError(N_("the {side} side of the {color} row already holds {n} cards: play on its {other} side"),
                                 side=side, color=color, n=SIDE_CARDS, other=other)
    new = replace(row, **{side: row.side(side) + (value,)})
    if any(r.color == color for r in rows):
        return tuple(new if r.color == color else r for r in rows)
    return rows + (new,)
