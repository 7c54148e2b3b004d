""""Keep this board?": the box on a board chosen on the Setup page (appliance/board_trial.py).

Over every other screen until it is answered: OK (on the new board's own
keys, which is the point: they work) keeps the board; BACK, or the time
running out, goes back to the board before.  The seconds left are on the
screen; the box's owner is looking at it, a phone in hand.
"""

from __future__ import annotations

import math
from typing import Callable

from companion.i18n import _

from .. import draw as d
from ..draw import Canvas


class KeepBoard:
    def __init__(self, app, board_name: str, seconds: float, keep: Callable[[], None],
                 back: Callable[[], None]):
        self.app = app
        self.board_name = board_name
        self.until = app.clock() + seconds
        self._keep, self._back = keep, back
        self.answered = False
        app.set_timer("board", seconds, self.time_up)
        # Redrawn every second for the countdown (the box sleeps otherwise).
        app.set_timer("board-tick", 1.0, self._tick)

    def _tick(self) -> None:
        if not self.answered:
            self.app.set_timer("board-tick", 1.0, self._tick)

    def left_s(self) -> int:
        return max(0, math.ceil(self.until - self.app.clock()))

    def key(self, name: str) -> None:
        if name == "ok":
            self._close()
            self._keep()
            self.app.show_message(_("Board kept: {name}.", name=_(self.board_name)))
        elif name == "back":
            self._close()
            self._back()

    def time_up(self) -> None:
        if not self.answered:
            self._close()
            self._back()

    def _close(self) -> None:
        self.answered = True
        self.app.cancel_timer("board")
        self.app.cancel_timer("board-tick")
        self.app.overlay = None

    def draw(self, c: Canvas) -> None:
        c.header(_("Keep this board?"), f"{self.left_s()} s")
        lines = d.wrap(_(self.board_name), d.BODY, d.WIDTH - 2 * d.MARGIN - 2)[:2]
        for i, line in enumerate(lines):
            c.center(d.ROW_Y + i * d.PITCH, line, d.BODY)
        c.footer(_("OK: keep · BACK: go back"))
