"""Screens and button logic of the box, one controller per game.

To add a game: write ``hardware/ui/<game>.py`` with a
:class:`~hardware.ui.base.Controller` subclass and list it below.  Games not
listed get :class:`~hardware.ui.generic.GenericController` (public scores).
"""

from __future__ import annotations

from .base import Controller
from .generic import GenericController
from .scoreboard import ScoreboardController
from .third_man import ThirdManController

CONTROLLERS: dict[str, type[Controller]] = {
    cls.game_id: cls for cls in (ThirdManController, ScoreboardController)
}


def controller_class(game_id: str) -> type[Controller]:
    return CONTROLLERS.get(game_id, GenericController)


__all__ = ["CONTROLLERS", "Controller", "GenericController", "controller_class"]
