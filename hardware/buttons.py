"""The box's buttons: gpiozero ``Button`` devices and our own debounce.

gpiozero hands us every edge (``when_pressed`` / ``when_released``); we stamp
it with :func:`time.monotonic` and queue it for the box's worker thread, which
feeds it to a :class:`Debouncer`.  The debounce is ours, not gpiozero's
``bounce_time``: mock pins ignore ``bounce_time`` (so it could not be tested),
and on a Pi the lgpio debounce waits for a stable level, which would add the
whole debounce time to every press.

The debouncer acts on the **first** edge (no added latency), then ignores the
button for ``bounce_ms``; at the end of that quiet window it re-reads the pin,
so a bounce that ends on the other level is still seen once.  So several edges
inside the window count once, and a tap shorter than the window still counts.

* UP, DOWN, OK act when pressed.  BACK acts when released, because a long
  press (``hold_s``) of BACK means something else (undo): the hold fires
  while the button is still down, and its release then does nothing.
* A button found pressed when the box starts (held at power-on, or a stuck
  contact) is *disarmed*: nothing happens until it has been released and
  pressed again.
* A button held down for ``stuck_s`` (a stuck contact, a box lying on it)
  acts once only, as any press, and is then reported *stuck* (the box shows a
  notice) until it is released; the other buttons keep working throughout.
"""

from __future__ import annotations

import glob
import logging
import os
from dataclasses import dataclass
from typing import Callable

from companion.i18n import N_

log = logging.getLogger("hardware.buttons")

# What the table is told when the buttons cannot be had, with what to check.
# (lgpio's own errors say little: "error", "can not open gpiochip".)
NO_GPIOCHIP = N_("The buttons do not work ({error}): this machine has no /dev/gpiochip*. On a Raspberry Pi, "
                 "check that the companion runs on the Pi itself with its pi extra installed. Use a phone meanwhile.")
GPIO_DENIED = N_("The buttons do not work ({error}): {user} may not open {chip}. Add that user to the gpio "
                 "group (sudo adduser {user} gpio) and restart the companion. Use a phone meanwhile.")
GPIO_FAILED = N_("The buttons do not work ({error}). Check that {chip} exists and that the gpio group may "
                 "read it, and the button pins in the settings. Use a phone meanwhile; see the companion's log.")


def gpio_notice(exc: BaseException, chips: list[str] | None = None) -> tuple[str, dict]:
    """The notice for buttons that could not be opened: what went wrong and what to check."""
    error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if len(error) > 70:
        error = error[:69] + "\u2026"
    chips = sorted(glob.glob("/dev/gpiochip*")) if chips is None else chips
    if not chips:
        return NO_GPIOCHIP, {"error": error}
    chip = chips[0]
    if isinstance(exc, PermissionError) or not os.access(chip, os.R_OK | os.W_OK):
        try:
            import pwd

            user = pwd.getpwuid(os.geteuid()).pw_name
        except (ImportError, KeyError):
            user = "the companion's user"
        return GPIO_DENIED, {"error": error, "user": user, "chip": chip}
    return GPIO_FAILED, {"error": error, "chip": chip}

ORDER = ("up", "down", "ok", "back")   # the standard buttons, in the order they are listed
HOLDABLE = frozenset({"back"})          # buttons whose long press means something


@dataclass
class _Button:
    pressed: bool               # debounced level: True = pressed
    armed: bool                 # False until a release has been seen (held at start)
    quiet_until: float = 0.0    # edges before this time are bounce
    recheck: bool = False       # an edge was ignored: re-read the pin when quiet
    down_at: float | None = None  # when the counted press began
    hold_done: bool = False     # the hold of this press was decided (fired or dropped)
    held: bool = False          # the hold fired for this press
    stuck_at: float | None = None  # when a press still down counts as a stuck button
    stuck: bool = False         # reported stuck, not yet released


class Debouncer:
    """Edges in, key events out: ``("press", name)`` or ``("hold", name)``.

    Pure and single-threaded (it lives in the box's worker): every method
    takes the time explicitly, so tests can drive it with made-up times.
    """

    def __init__(self, bounce_s: float, hold_s: float, holdable=HOLDABLE, stuck_s: float | None = None):
        self.bounce_s = float(bounce_s)
        self.hold_s = float(hold_s)
        self.stuck_s = float(stuck_s) if stuck_s else None
        self.holdable = frozenset(holdable)
        self.buttons: dict[str, _Button] = {}

    def add(self, name: str, pressed_now: bool, t: float | None = None) -> None:
        """Register a button with its level at start (time ``t``); a pressed
        one is disarmed, and reported stuck if still down ``stuck_s`` later."""
        if pressed_now:
            log.warning("button %s is pressed at start: ignored until released", name)
        button = _Button(pressed=pressed_now, armed=not pressed_now)
        if pressed_now and t is not None and self.stuck_s:
            button.stuck_at = t + self.stuck_s
        self.buttons[name] = button

    def edge(self, name: str, pressed: bool, t: float) -> list[tuple[str, str]]:
        b = self.buttons[name]
        if t < b.quiet_until:
            b.recheck = True
            return []
        if pressed == b.pressed:
            return []
        return self._accept(name, b, pressed, t)

    def _accept(self, name: str, b: _Button, pressed: bool, t: float) -> list[tuple[str, str]]:
        b.pressed, b.quiet_until, b.recheck = pressed, t + self.bounce_s, False
        if pressed:
            b.stuck_at = t + self.stuck_s if self.stuck_s else None
            if not b.armed:
                return []
            b.down_at, b.hold_done, b.held = t, name not in self.holdable, False
            return [] if name in self.holdable else [("press", name)]
        events = []
        if b.stuck:
            events.append(("unstuck", name))    # the release of a stuck button does nothing else
        elif b.armed and b.down_at is not None and not b.held and name in self.holdable:
            events.append(("press", name))      # a short press of BACK
        b.down_at, b.armed, b.stuck_at, b.stuck = None, True, None, False
        return events

    def due(self, now: float, level: Callable[[str], bool]) -> list[tuple[str, str]]:
        """Events whose time has come: quiet windows ending, holds reached.
        ``level(name)`` reads the pin (True = pressed)."""
        events: list[tuple[str, str]] = []
        for name, b in self.buttons.items():
            if b.recheck and now >= b.quiet_until:
                b.recheck = False
                actual = level(name)
                if actual != b.pressed:
                    events += self._accept(name, b, actual, now)
            if b.down_at is not None and not b.hold_done and now >= b.down_at + self.hold_s:
                b.hold_done = True
                if b.pressed and level(name):
                    b.held = True
                    events.append(("hold", name))
            if b.stuck_at is not None and now >= b.stuck_at:
                b.stuck_at = None
                if b.pressed and level(name):
                    b.stuck, b.held, b.hold_done = True, True, True
                    events.append(("stuck", name))
        return events

    def next_deadline(self) -> float | None:
        times = []
        for b in self.buttons.values():
            if b.recheck:
                times.append(b.quiet_until)
            if b.down_at is not None and not b.hold_done:
                times.append(b.down_at + self.hold_s)
            if b.stuck_at is not None:
                times.append(b.stuck_at)
        return min(times) if times else None


def button_names(config: dict) -> list[str]:
    """The configured buttons, lower case: up, down, ok, back first, then extras."""
    names = [str(n).lower() for n in (config.get("buttons") or {})]
    return [n for n in ORDER if n in names] + sorted(n for n in names if n not in ORDER)


class _NoHold:
    """Stands in for gpiozero's hold thread (see :func:`_quiet`)."""

    def __init__(self):
        import threading

        self.holding = threading.Event()   # set on every press; nobody waits on it

    def stop(self):
        pass


def _quiet(button):
    """Stop the button's hold thread.  gpiozero starts one per ``Button`` that
    wakes ten times a second even at rest; our input layer times holds itself
    with a timer, so the box can sleep for real between presses."""
    thread = button._hold_thread
    button._hold_thread = _NoHold()
    if thread is not None:
        # Wake it as well as telling it to stop: gpiozero's own stop() waits
        # for the thread's next 0.1 s tick, which cost 0.4 s of every cold
        # start with four buttons.  Woken with ``stopping`` set, it leaves at
        # once (its inner loop checks ``stopping`` first).
        thread.stopping.set()
        thread.holding.set()
        thread.join(1.0)
    return button


class Buttons:
    """The gpiozero side: one ``Button`` per input (pull-up, wired to GND),
    ``pins`` mapping each input's name to its pin; each edge is handed to
    ``on_edge(name, pressed, t)``."""

    def __init__(self, pins: dict, factory, on_edge: Callable[[str, bool, float], None], clock,
                 hold_s: float = 1.0):
        from gpiozero import Button

        self.devices: dict = {}
        try:
            for name, pin in pins.items():
                # bounce_time=None: the debounce is ours (see the module docstring).
                button = _quiet(Button(pin, pull_up=True, bounce_time=None, hold_time=float(hold_s),
                                       pin_factory=factory))
                self.devices[name] = button
                button.when_pressed = _edge(on_edge, name, True, clock)
                button.when_released = _edge(on_edge, name, False, clock)
        except BaseException:
            self.close()          # release the pins already taken
            raise

    def level(self, name: str) -> bool:
        return bool(self.devices[name].is_pressed)

    def close(self) -> None:
        for button in self.devices.values():
            try:
                button.close()
            except Exception:  # closing must go on for the other devices
                log.exception("closing button failed")
        self.devices.clear()


def _edge(on_edge, name: str, pressed: bool, clock):
    def callback():
        on_edge(name, pressed, clock())
    return callback
