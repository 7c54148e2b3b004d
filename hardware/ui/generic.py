"""The screen for games that have no box controller yet: public scores only.

UP/DOWN scroll when there are more than four seats; the game itself is
played from the phones; BACK opens the menu (undo, new game).
"""

from __future__ import annotations

from companion import games
from companion.i18n import _

from .. import draw as d
from ..draw import Canvas
from .base import Controller, hint_line, short_name

ROWS = 3


class GenericController(Controller):
    game_id = ""

    def __init__(self, app):
        super().__init__(app)
        self.first = 0

    def key(self, name: str) -> bool:
        n = len(self.public.get("players") or [])
        if name in ("up", "down"):
            self.first = max(0, min(self.first + (-1 if name == "up" else 1), max(0, n - ROWS)))
            return True
        return False

    def draw(self, c: Canvas, p: dict) -> None:
        try:
            title = _(games.get(p["game"]).title)
        except Exception:  # an unknown id still shows its scores
            title = str(p.get("game"))
        c.header(title, _("over") if p.get("finished") else "")
        players = p.get("players") or []
        scores = p.get("scores") or [0] * len(players)
        winners = set(p.get("winner") or ())
        for i, seat in enumerate(range(self.first, min(len(players), self.first + ROWS))):
            c.row(d.ROW_Y + i * d.PITCH, short_name(players[seat], players, 80), False,
                  right=d.number(scores[seat]), icon="star" if seat in winners else None)
        hint_line(c, _("Use a phone · BACK: menu"))
