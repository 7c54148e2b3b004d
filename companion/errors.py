"""The error family of the core.

Every refusal the companion gives a player is one of these, and every one
carries an English message template plus its parameters, so that the boundary
(OLED, web page, command line) can say it in the player's language.  Like
python-chess's ``InvalidMoveError``/``IllegalMoveError`` the two main kinds are
``ValueError`` subclasses:

* :class:`InvalidActionError` — the action is not well formed (missing key,
  wrong type, unknown action or game).  It could never be legal.
* :class:`IllegalActionError` — the action is well formed but the rules do not
  allow it now (a card already played, not your turn...).
"""

from __future__ import annotations

from .i18n import N_


class CompanionError(Exception):
    """Root of every error the companion reports to a person."""

    def __init__(self, message: str, **params):
        self.template = message
        self.params = params
        super().__init__(self.render())

    def render(self, translate=None) -> str:
        """The message, translated by ``translate`` (a gettext-like callable) if given."""
        template = translate(self.template) if translate else self.template
        try:
            return template.format(**self.params)
        except (KeyError, IndexError, ValueError):
            return template

    def __str__(self) -> str:  # the English text, for logs and the CLI
        return self.render()


class ActionError(CompanionError, ValueError):
    """An action was refused; the stored game is unchanged."""


class InvalidActionError(ActionError):
    """The action is malformed: unknown type, missing/extra key, wrong type or range."""


class IllegalActionError(ActionError):
    """The action is well formed but the rules forbid it in this state."""


class NothingToUndo(IllegalActionError):
    """``undo`` with no action left in effect but ``new_game``."""

    def __init__(self):
        super().__init__(N_("nothing to undo"))


class GameOver(IllegalActionError):
    """Any action but ``undo`` after the end of the game."""

    def __init__(self):
        super().__init__(N_("the game is over; only undo is allowed"))


class StoreError(CompanionError):
    """The game store could not be read or written."""
