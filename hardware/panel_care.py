"""Panel care: the OLED dims, then sleeps, when the table leaves it alone.

An OLED's pixels wear with the hours they are lit, and those that stay lit
in the same place (the idle screen's PIN, a title bar, a hint line) burn
in.  A box left plugged in at a club would light them day and night.  So:

* after ``panel_dim_s`` seconds without a button or a change from a phone
  or the hub, the panel **dims** (its lowest contrast: still readable);
* after ``panel_sleep_s`` it **sleeps**: the panel is switched off (the
  controller's display-off command; what it holds is kept) and the box's
  own frame (``/dev/oled.png`` in mock mode) is black, as the glass is;
* any button wakes it, and a press that wakes a *sleeping* panel does
  nothing else (the player could not see what it would have done); a
  press on a dimmed panel, which is still readable, does what it says and
  brings the brightness back;
* ``0`` turns either step off (``COMPANION_PANEL_DIM_S``,
  ``COMPANION_PANEL_SLEEP_S`` override the settings file);
* the brightness (``panel_brightness``: low, medium, high) is chosen in the
  box's menu and kept in ``companion.toml``;
* screens that stay up long (:meth:`hardware.ui.app.App.long_lived`: the
  idle screen, a game's board or a result waiting) are moved by a pixel now
  and then (every :data:`SHIFT_S` while lit), round a small orbit, and only
  where the move keeps every rule of the layout check (no ink on the clear
  margin, nothing pushed off the panel).

All of it is one object the box's thread asks for its next deadline: the
thread sleeps until then (there is no polling), and while the panel sleeps
there is no deadline at all.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from PIL import Image, ImageDraw

from . import draw as d

log = logging.getLogger("hardware.panel_care")

DIM_S = 600.0          # ten minutes: a long think at the table never sees it
SLEEP_S = 1800.0       # half an hour without anyone touching the table
SHIFT_S = 180.0        # a long-lived screen moves by a pixel this often

LIT, DIM, ASLEEP = "lit", "dim", "asleep"

# The SSD1306/SH1106 contrast register (0x81), per level.  "low" is meant
# for a dark room at night: still readable at arm's length, a sixteenth of
# the panel's current.  The default, "medium", is readable in a lit room.
BRIGHTNESS = {"low": 0x10, "medium": 0x60, "high": 0xFF}
DEFAULT_BRIGHTNESS = "medium"
DIM_CONTRAST = 0x01    # dimmed: the faintest the controller shows

# Where a long-lived screen's content goes, in turn (dx, dy): a pixel each way.
ORBIT = ((0, 0), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))


def seconds(value, default: float, name: str) -> float:
    """A delay setting: seconds >= 0 (0 turns the step off); a bad value
    is logged in one line and the default used (the box still starts)."""
    if value is None:
        return default
    try:
        s = float(value)
    except (TypeError, ValueError):
        log.warning("%s must be a number of seconds (0: never), not %r; using %g", name, value, default)
        return default
    if not s >= 0 or s == float("inf"):
        log.warning("%s must be 0 (never) or more seconds, not %r; using %g", name, value, default)
        return default
    return s


def brightness(value) -> str:
    value = str(value or "").strip().lower()
    return value if value in BRIGHTNESS else DEFAULT_BRIGHTNESS


class PanelCare:
    """The panel's state (lit, dim, asleep) and the content's offset.

    ``clock`` is the box's monotonic clock (a fake one in tests)."""

    def __init__(self, config: dict, clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.clock = clock
        self.dim_s = seconds(config.get("panel_dim_s"), DIM_S, "panel_dim_s")
        self.sleep_s = seconds(config.get("panel_sleep_s"), SLEEP_S, "panel_sleep_s")
        self.touched = clock()
        self.state = LIT
        self.step = 0                       # where in ORBIT a long-lived screen is
        self.next_shift: float | None = None

    # -- what the box tells it ------------------------------------------------------
    def wake(self) -> bool:
        """Someone is at the table: full brightness again, the idle clock
        restarts.  Returns whether the panel was asleep (then the press that
        woke it must do nothing else)."""
        asleep = self.state == ASLEEP
        self.touched = self.clock()
        self.state = LIT
        return asleep

    def long_lived(self, yes: bool) -> None:
        """Whether the screen now up stays up long: arms the next move."""
        if not yes:
            self.next_shift = None
        elif self.next_shift is None:
            self.next_shift = self.clock() + SHIFT_S

    def due(self, now: float) -> None:
        idle = now - self.touched
        if self.sleep_s and idle >= self.sleep_s:
            self.state = ASLEEP
        elif self.dim_s and idle >= self.dim_s and self.state == LIT:
            self.state = DIM
        if self.next_shift is not None and now >= self.next_shift and self.state != ASLEEP:
            self.step = (self.step + 1) % len(ORBIT)
            self.next_shift = now + SHIFT_S

    def next_deadline(self) -> float | None:
        """The next time :meth:`due` has something to do (None: nothing, ever,
        until :meth:`wake`)."""
        if self.state == ASLEEP:
            return None
        times = []
        if self.state == LIT and self.dim_s and (not self.sleep_s or self.dim_s < self.sleep_s):
            times.append(self.touched + self.dim_s)
        if self.sleep_s:
            times.append(self.touched + self.sleep_s)
        if self.next_shift is not None:
            times.append(self.next_shift)
        return min(times, default=None)

    # -- what the panel gets ----------------------------------------------------------
    @property
    def lit(self) -> bool:
        return self.state != ASLEEP

    @property
    def level(self) -> str:
        return brightness(self.config.get("panel_brightness"))

    def contrast(self) -> int:
        return DIM_CONTRAST if self.state == DIM else BRIGHTNESS[self.level]

    def place(self, canvas) -> tuple[int, int]:
        """Move a long-lived screen's content to its place in the orbit (in
        place, items included, so the layout check reads what is shown);
        the first place from there on that keeps the layout rules.  Returns
        the offset used."""
        if self.next_shift is None or self.step == 0:
            return (0, 0)
        for i in range(len(ORBIT)):
            dx, dy = ORBIT[(self.step + i) % len(ORBIT)]
            if (dx, dy) == (0, 0) or fits(canvas, dx, dy):
                shift(canvas, dx, dy)
                return (dx, dy)
        return (0, 0)


def fits(canvas, dx: int, dy: int) -> bool:
    """Whether moving the frame by (dx, dy) keeps every lit pixel on the
    panel and every glyph's ink off its clear margin."""
    box = canvas.image.getbbox()
    if box is None:
        return True
    x0, y0, x1, y1 = box
    if x0 + dx < 0 or y0 + dy < 0 or x1 + dx > d.WIDTH or y1 + dy > d.HEIGHT:
        return False
    m = d.MARGIN
    for item in canvas.items:
        if item["kind"] in ("text", "icon"):
            a, b, c, e = item["box"]
            if a + dx < m or b + dy < m or c + dx > d.WIDTH - m or e + dy > d.HEIGHT - m:
                return False
    return True


def shift(canvas, dx: int, dy: int) -> None:
    moved = Image.new("1", canvas.image.size, d.OFF)
    moved.paste(canvas.image, (dx, dy))
    canvas.image = moved
    canvas.draw = ImageDraw.Draw(moved)
    canvas.draw.fontmode = "1"
    for item in canvas.items:
        x0, y0, x1, y1 = item["box"]
        item["box"] = (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
