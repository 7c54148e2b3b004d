"""The games the companion can keep, by id.

Each game lives in its own module and exposes a module-level ``GAME``, an
instance of :class:`companion.games.base.Game`.
"""

from __future__ import annotations

import importlib

from ..errors import InvalidActionError
from ..i18n import N_
from .base import Game

# id -> module name, in the order menus list them.
MODULES = {
    "third-man": "third_man",
    "costly-tricks": "costly_tricks",
    "fight": "fight",
    "sloppy-seconds": "sloppy_seconds",
    "yenta": "yenta",
    "diabolo": "diabolo",
    "scoreboard": "scoreboard",
}

_cache: dict[str, Game] = {}


def available() -> list[str]:
    """Ids of the games whose module is installed, in menu order."""
    return [gid for gid in MODULES if _load(gid) is not None]


def _load(game_id: str) -> Game | None:
    if game_id not in _cache:
        try:
            module = importlib.import_module(f"{__name__}.{MODULES[game_id]}")
        except ModuleNotFoundError:
            return None
        _cache[game_id] = module.GAME
    return _cache[game_id]


def get(game_id) -> Game:
    """The game declared under ``game_id``, or an InvalidActionError."""
    game = _load(game_id) if isinstance(game_id, str) and game_id in MODULES else None
    if game is None:
        raise InvalidActionError(N_("unknown game '{game}'"), game=str(game_id))
    return game
