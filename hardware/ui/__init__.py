"""Screens and button logic of the box, one controller per game.

To add a game: write ``hardware/ui/<game>.py`` with a
:class:`~hardware.ui.base.Controller` subclass and list it below.  Games not
listed get :class:`~hardware.ui.generic.GenericController` (public scores).
"""

from __future__ import annotations

from .base import Controller
from .costly_tricks import CostlyTricksController
from .diabolo import DiaboloController
from .fight import FightController
from .generic import GenericController
from .scoreboard import ScoreboardController
from .sloppy_seconds import SloppySecondsController
from .third_man import ThirdManController
from .yenta import YentaController

CONTROLLERS: dict[str, type[Controller]] = {
    cls.game_id: cls for cls in (ThirdManController, ScoreboardController, CostlyTricksController,
                                 SloppySecondsController, FightController, YentaController, DiaboloController)
}


def controller_class(game_id: str) -> type[Controller]:
    return CONTROLLERS.get(game_id, GenericController)


__all__ = ["CONTROLLERS", "Controller", "GenericController", "controller_class"]
