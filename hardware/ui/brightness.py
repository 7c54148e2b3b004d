"""Menu → Brightness: the panel's brightness (hardware/panel_care.py), low,
medium or high.  OK steps to the next level at once, so the table sees the
effect on the panel as it chooses; the level is kept in
``<data>/companion.toml`` as ``panel_brightness`` for the next start.

"low" is meant for a dark room at night (see the levels in panel_care);
"medium" is the default.
"""

from __future__ import annotations

from companion.i18n import N_, gettext

from ..panel_care import BRIGHTNESS, brightness
from .common import save_box_setting

LEVELS = list(BRIGHTNESS)                    # low, medium, high
NAMES = {"low": N_("low"), "medium": N_("medium"), "high": N_("high")}


def entry(app) -> tuple:
    """The main menu's row: (label, the level now, what OK does)."""
    level = brightness(app.config.get("panel_brightness"))
    return gettext(N_("Brightness")), gettext(NAMES[level]), lambda: step(app)


def step(app) -> str:
    """The next level, set at once (the box's thread applies it with the
    next frame) and saved."""
    level = brightness(app.config.get("panel_brightness"))
    level = LEVELS[(LEVELS.index(level) + 1) % len(LEVELS)]
    app.config["panel_brightness"] = level
    save_box_setting(app, "panel_brightness", level)
    return level
