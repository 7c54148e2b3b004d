"""The box's screen logic: which screen is up, and what a button does.

:class:`App` is a plain single-threaded object driven by the box's worker:
``key``/``hold`` for debounced buttons, ``refresh`` after a session change,
``due`` when one of its timers is up, ``draw`` for the frame.  Its parts:

* the game's controller (``hardware.ui.CONTROLLERS``, or the generic one),
  rebuilt when a new game starts;
* a stack of layers over it (menus, the undo question, the QR code);
* a message panel ("toast") for refused actions, dismissed by the next
  button (which does nothing else) or after a few seconds;
* the table's notices (``session.table.notices``: a damaged game store, a
  stuck button...), one screen each over everything else until OK dismisses
  it — for everyone, the phones included;
* a screen for each new phone claim ("Phone claim · Seat 2 · Ben", the phone),
  with two choices, *Keep* (where it starts) and *Release*: OK takes the one
  under the bar, UP/DOWN move it, BACK keeps the claim and leaves.  Releasing
  (the phone's token stops working at once) is thus a choice made on
  purpose, never the BACK that opens the menu everywhere else.  The holder
  of the box sees who took a seat before any secret is entered; the menu's
  "Phone seats" releases a claim later;
* a new PIN drawn from the menu: :meth:`new_pin` tells the web app
  (:meth:`hardware.box.Box.subscribe_pin`), the old PIN stops working and the
  phones' seat tokens go on working;
* named timers (deadlines the worker waits for; nothing polls, except a
  look every few seconds at the club hub's feeder when one is configured);
* the club hub (``hub``: the feeder, hub/feeder.py, or None): its status on
  the idle screen and in Menu → Hub, and the tournament table it offers
  (hardware/ui/hub.py).
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Callable

from companion.errors import CompanionError
from companion.i18n import _, gettext, translate_error

from .. import draw as d
from ..draw import Canvas
from . import clock as clock_screen
from . import hub as hub_screen
from . import setup as setup_screen
from .base import Controller, UndoStep
from .common import Layer
from .menus import MainMenu, UndoConfirm

log = logging.getLogger("hardware.ui")

TOAST_S = 4.0
# A press this soon after the screen moved on by itself (a result's time up,
# a message gone) is taken as meant for the screen that was there, and
# dropped: an OK for "Round 1 over" must not pick from the menu that follows.
MOVED_GUARD_S = 1.0


class App:
    def __init__(self, session, config: dict, *, chirp: Callable[[int], None] = lambda n: None,
                 clock: Callable[[], float] = time.monotonic):
        from . import controller_class

        self.session = session
        self.config = config
        self.language = config.get("language")
        self.chirp = chirp
        self.clock = clock
        self.controller_class = controller_class
        self.public: dict = {"game": None}
        self.controller: Controller | None = None
        self.layers: list[Layer] = []
        self.toast: list[str] | None = None
        self.join: tuple[str, str] | None = None
        self.notices: list[tuple[str, dict]] = []   # the table's, oldest first; the first is shown
        self.notice_line = 0                         # first line shown of a long notice
        # Without buttons nothing can dismiss a notice here: the box then
        # shows each for this long only (the phones still list it).
        self.notice_s: float | None = None
        self._notices_gone: list[tuple[str, dict]] = []
        self.claims: dict[int, str] = {}                 # seat -> label, as last seen
        self.claim_news: list[tuple[int, str]] = []      # claims to show, oldest first
        self.claim_release = False                       # the bar on "Release" (else on "Keep")
        self.pin_callbacks: list[Callable[[str], None]] = []
        self.timers: dict[str, tuple[float, Callable[[], None]]] = {}
        self.hub = None                  # the club hub's feeder, set by hub/box.py
        self.hub_seen: set[tuple] = set()   # tournament offers already shown once
        self.moved_at: float | None = None  # when a timer last changed the screen
        # Over everything until answered: "Keep this board?" (hardware/ui/board_trial.py).
        self.overlay = None

    # -- the table ---------------------------------------------------------------
    def has_game(self) -> bool:
        return self.controller is not None

    def names(self) -> list[str]:
        return [str(n) for n in (self.config.get("names") or [])]

    def refresh(self, change=None) -> None:
        """Follow the session after ``change`` (None: at start).

        The state is the one *of that change*, not the session's current one:
        when a phone's changes queue up, each is followed in turn, so a
        reveal or a round's end is never skipped over."""
        self.public = change.state if change is not None else self.session.public()
        game = self.public.get("game")
        rebuild = (change is None and (self.controller is None) != (game is None)) or (
            change is not None and change.kind in ("new_game", "resume"))
        if rebuild:
            self.cancel_timers()
            if change is not None:
                self.layers.clear()         # a new game (maybe from a phone): show it
            self.controller = self.controller_class(game)(self) if game else None
        if self.controller is not None:
            self.controller.sync(self.public, change)
        clock_screen.follow(self, change)
        clock_screen.remember(self, change)
        if change is None or change.kind == "table":
            self._sync_notices()
        if change is None or change.kind in ("table", "new_game", "resume"):
            self._sync_claims()

    # -- phone claims ------------------------------------------------------------
    def _sync_claims(self) -> None:
        """Queue a screen for each claim the box has not seen yet (with
        buttons to answer it; without, the phones list the claims)."""
        with self.session.lock:
            claims = dict(self.session.table.claims)
        fresh = [(seat, label) for seat, label in sorted(claims.items()) if self.claims.get(seat) != label]
        self.claims = claims
        self.claim_news = [(seat, label) for seat, label in self.claim_news if claims.get(seat) == label]
        if fresh and self.notice_s is None:
            self.claim_news += fresh
            if self.controller is not None:
                self.controller.leave_private()     # the claim covers a private pick, like a menu

    def release_claim(self, seat: int, label: str | None = None) -> None:
        """End the claim on ``seat`` (only if it is still ``label``'s)."""
        def release(table):
            if seat in table.claims and (label is None or table.claims[seat] == label):
                del table.claims[seat]
        self.session.update_table(release)

    def _claim_key(self, name: str) -> None:
        if name in ("up", "down"):
            self.claim_release = not self.claim_release
            return
        if name not in ("ok", "back"):
            return
        release = name == "ok" and self.claim_release
        self.claim_release = False              # the next claim's screen starts on "Keep"
        seat, label = self.claim_news.pop(0)
        if release:
            self.release_claim(seat, label)
            self.show_message(_("Seat {n} released: that phone cannot read or enter anything for it.", n=seat + 1))

    def _draw_claim(self, c: Canvas) -> None:
        seat, label = self.claim_news[0]
        players = self.public.get("players") or []
        name = players[seat] if seat < len(players) else "?"
        c.header(_("Phone claim"), f"1/{len(self.claim_news)}" if len(self.claim_news) > 1 else "")
        # The seat, then the phone as it named itself: each on a line of its own, whole if it fits.
        c.text(1, d.ROW_Y, d.fit(_("Seat {n} · {name}", n=seat + 1, name=name), d.SMALL, d.WIDTH - 2), d.SMALL)
        c.text(1, d.ROW_Y + d.PITCH, d.fit(label, d.STRONG, d.WIDTH - 2), d.STRONG)
        # The two choices side by side on the last row, the bar on the one OK takes.
        y = d.ROW_Y + 2 * d.PITCH
        half = d.WIDTH // 2
        for i, choice in enumerate((_("Keep"), _("Release"))):
            x0, x1 = i * half, (i + 1) * half - 1
            on = (i == 1) == self.claim_release
            if on:
                c.fill(x0, y - 1, x1, y + d.LINE, d.ON)
            c.center(y, d.fit(choice, d.STRONG, half - 4), d.STRONG, x0, x1 + 1, fill=d.OFF if on else d.ON)
        c.footer(_("OK: choose · BACK: keep"))

    # -- the PIN -----------------------------------------------------------------
    def new_pin(self) -> str | None:
        """Draw a new table PIN (never the old one) and tell the web app;
        None when the web page is not running (no PIN to change)."""
        if self.join is None:
            return None
        url, old = self.join
        pin = old
        while pin == old:
            pin = f"{secrets.randbelow(10_000):04d}"
        self.join = (url, pin)
        for callback in list(self.pin_callbacks):
            try:
                callback(pin)
            except Exception:
                log.exception("PIN subscriber %r failed", callback)
        return pin

    # -- notices -----------------------------------------------------------------
    def _sync_notices(self) -> None:
        with self.session.lock:
            notices = [n for n in self.session.table.notices if n not in self._notices_gone]
        if notices and notices[0] not in self.notices[:1]:
            self.notice_line = 0
            if self.controller is not None:
                self.controller.leave_private()     # a notice covers a private pick, like a menu
            if self.notice_s is not None:
                self.set_timer("notice", self.notice_s, self._notice_time_up)
        self.notices = notices

    def _notice_time_up(self) -> None:
        if self.notices:
            self._notices_gone.append(self.notices[0])
            self._sync_notices()

    def _notice_key(self, name: str) -> None:
        """OK dismisses the notice for the whole table (BACK too, should OK
        be the stuck button); UP/DOWN scroll a long one."""
        if name in ("ok", "back"):
            shown = self.notices[0]
            self.notices = self.notices[1:]
            self.notice_line = 0
            self.session.update_table(lambda table: table.notices.remove(shown)
                                      if shown in table.notices else None)
        elif name in ("up", "down"):
            self.notice_line = max(0, self.notice_line + (1 if name == "down" else -1))

    def _draw_notice(self, c: Canvas) -> None:
        template, params = self.notices[0]
        right = f"1/{len(self.notices)}" if len(self.notices) > 1 else ""
        c.header(_("Notice"), right)
        lines = _wrap_all(gettext(template, **(params or {})), d.SMALL, d.WIDTH - 2)
        shown = 3
        self.notice_line = min(self.notice_line, max(0, len(lines) - shown))
        for i, line in enumerate(lines[self.notice_line:self.notice_line + shown]):
            c.text(1, 15 + i * 12, line, d.SMALL)
        more = len(lines) > shown
        c.footer(_("▴▾ more · OK: dismiss") if more else _("OK: dismiss"))

    def private(self, seat: int) -> dict:
        return self.session.private(seat)

    def last_step(self) -> UndoStep | None:
        """The action an undo would take back, for the undo prompt; None
        when only the new game is in effect.  A secret entry keeps only its
        type and seat here: its value never leaves the session."""
        with self.session.lock:
            timeline = self.session.timeline
            if len(timeline.steps) < 2:
                return None
            step, before = timeline.steps[-1], timeline.steps[-2]
            action = dict(step.action)
            if step.secret:
                action = {k: action[k] for k in ("type", "seat") if k in action}
            return UndoStep(action, step.secret, timeline.game.public(before.state),
                            timeline.game.public(step.state))

    def describe_undo(self) -> str:
        """What the undo prompt names ("Ben's locked card"), or "" when it
        cannot say (nothing to undo, or a game whose screen does not know)."""
        step = self.last_step()
        if step is None or self.controller is None:
            return ""
        if step.action.get("type") == "clock":
            return _("the turn clock's last handover")
        try:
            return self.controller.describe_undo(step)
        except Exception:       # a description must never keep the table from undoing
            log.exception("describing the undo failed")
            return ""

    def submit(self, action: dict) -> bool:
        """Hand ``action`` to the session; on refusal show why and return False."""
        try:
            self.session.submit(action, source="buttons")
            return True
        except CompanionError as exc:
            self.show_message(translate_error(exc, self.language))
            return False

    def show_message(self, text: str, seconds: float = TOAST_S) -> None:
        self.toast = d.wrap(text, d.BODY, d.WIDTH - 14) or [text]
        self.set_timer("toast", seconds, self._clear_toast)

    def _clear_toast(self) -> None:
        self.toast = None

    # -- layers ------------------------------------------------------------------
    def push(self, layer: Layer) -> None:
        if self.controller is not None:
            self.controller.leave_private()
        self.layers.append(layer)

    def pop(self) -> None:
        if self.layers:
            self.layers.pop()

    def close_layers(self) -> None:
        self.layers.clear()

    def open_menu(self) -> None:
        self.push(MainMenu(self))

    # -- buttons -----------------------------------------------------------------
    def key(self, name: str) -> None:
        if self.overlay is not None:
            self.overlay.key(name)
            return
        if self._meant_for_the_screen_before():
            return
        if self.notices:
            self._notice_key(name)
            return
        if self.claim_news:
            self._claim_key(name)
            return
        if self.toast is not None:
            self.cancel_timer("toast")
            self.toast = None               # the button that closes a message does nothing else
            return
        if self.layers:
            self.layers[-1].key(name)
            return
        if self.controller is None:
            if name in ("ok", "back"):
                self.open_menu()
            return
        if not self.controller.key(name) and name == "back":
            self.open_menu()

    def hold(self, name: str) -> None:
        """A long press: BACK asks whether to undo; others mean nothing."""
        if name != "back" or self.notices or self.claim_news or self.overlay is not None:
            return
        self.toast = None
        if self.layers and isinstance(self.layers[-1], UndoConfirm):
            return
        if self.controller is None:
            self.show_message(_("Nothing to undo: no game yet."))
            return
        self.push(UndoConfirm(self))

    # -- timers ------------------------------------------------------------------
    def set_timer(self, key: str, seconds: float, fn: Callable[[], None]) -> None:
        self.timers[key] = (self.clock() + seconds, fn)

    def cancel_timer(self, key: str) -> None:
        self.timers.pop(key, None)

    def cancel_timers(self) -> None:
        """Forget the game's timers (a new game); the message's and the notice's stay."""
        kept = {k: v for k, v in self.timers.items() if k in ("toast", "notice", "hub", "setup", "board",
                                                               "board-tick")}
        self.timers.clear()
        self.timers.update(kept)

    def next_deadline(self) -> float | None:
        return min((t for t, _fn in self.timers.values()), default=None)

    def due(self, now: float) -> None:
        before = self.screen_id()
        for key, (deadline, fn) in sorted(self.timers.items(), key=lambda kv: kv[1][0]):
            if deadline <= now and self.timers.get(key, (None,))[0] == deadline:
                del self.timers[key]
                fn()
        if self.hub is not None:
            hub_screen.tick(self)
        setup_screen.tick(self)
        if self.screen_id() != before:
            self.moved_at = now

    def screen_id(self) -> tuple:
        """Which screen is up (not what it shows): the layers, the game's
        mode, a message or a notice.  A change of it that no button made
        arms :meth:`_meant_for_the_screen_before`."""
        controller = self.controller
        return (tuple(type(layer).__name__ for layer in self.layers),
                type(controller).__name__, getattr(controller, "mode", None),
                self.toast is not None, self.notices[:1], self.claim_news[:1])

    def _meant_for_the_screen_before(self) -> bool:
        """Whether to drop this press: the first one within MOVED_GUARD_S of
        the screen moving on by itself (only the first: a second press is
        meant for what the player now sees)."""
        if self.moved_at is None:
            return False
        recent = self.clock() - self.moved_at < MOVED_GUARD_S
        self.moved_at = None
        return recent

    # -- the frame ---------------------------------------------------------------
    def is_private(self) -> bool:
        """Whether the screen up now must stay off the web mirror: a seat
        choosing a secret (or being handed the box for one), or the PIN
        (the idle screen, the QR screen, a new PIN)."""
        if self.notices or self.claim_news:
            return False
        if self.layers:
            return bool(getattr(self.layers[-1], "private", False))
        if self.controller is not None:
            return self.controller.is_private()
        return self.join is not None

    def long_lived(self) -> bool:
        """Whether the screen up now may stay up long, so that the panel
        moves its content by a pixel now and then against burn-in
        (hardware/panel_care.py): the idle screen, and any layer or game
        screen that says so with ``long_lived = True`` (or a method)."""
        if self.notices or self.claim_news or self.toast:
            return False
        if self.layers:
            top = self.layers[-1]
        elif self.controller is not None:
            top = self.controller
        else:
            return True                     # the idle screen, with its PIN
        said = getattr(top, "long_lived", False)
        return bool(said() if callable(said) else said)

    def draw_public(self, c: Canvas) -> None:
        """The frame for the web mirror while :meth:`is_private`: drawn on a
        canvas marked ``mirror``, from public facts only (no cursor, no
        value being chosen, no PIN), so it is the same whatever the secrets
        and the PIN are."""
        c.mirror = True
        if self.overlay is not None:
            self.overlay.draw(c)
            return
        if self.notices:
            self._draw_notice(c)
        elif self.claim_news:
            self._draw_claim(c)
        elif self.layers:
            self.layers[-1].draw(c)             # a private layer hides its PIN on a mirror canvas
        elif self.controller is not None:
            if self.controller.is_private():
                self.controller.public_frame(c, self.public)
                return                          # a message over a pick is the picker's alone
            self.controller.draw(c, self.public)
        else:
            self._draw_idle(c)
        if self.toast:
            c.panel(self.toast)

    def draw(self, c: Canvas) -> None:
        clock_screen.arm(self)
        if self.overlay is not None:
            self.overlay.draw(c)
        elif self.notices:
            self._draw_notice(c)
        elif self.claim_news:
            self._draw_claim(c)
        elif self.layers:
            self.layers[-1].draw(c)
        elif self.controller is not None:
            self.controller.draw(c, self.public)
        else:
            self._draw_idle(c)
        if self.toast:
            c.panel(self.toast)

    def locked_seats(self) -> set[int]:
        """Seats whose LED is lit: a locked secret entry, or a clock bank
        that ran out."""
        if self.controller is None:
            return set()
        return self.controller.locked_seats(self.public) | clock_screen.flagged_seats(self)

    def _draw_idle(self, c: Canvas) -> None:
        """The neutral screen before any game; in set-up mode on a box with
        no Wi-Fi of its own (a laptop), the set-up screen (hardware/ui/setup.py)."""
        if setup_screen.idle_setup(self):
            setup_screen.draw_idle_setup(self, c)
            return
        c.center(4, _("Game companion"), d.TITLE)
        c.hline(8, d.WIDTH - 9, 22)
        c.center(27, _("OK: menu · new game"), d.BODY)
        hub = hub_screen.status(self)
        if self.join is not None and not getattr(c, "mirror", False):
            c.center(40 if hub else 45, _("Phones: PIN {pin}", pin=self.join[1]), d.SMALL)
        if hub:
            c.center(52, hub_screen.idle_line(hub), d.SMALL)


def _wrap_all(text: str, font, width: int) -> list[str]:
    """Greedy word wrap that splits a word too long for a line (a file name)
    over several lines instead of cutting it: a notice is read to its end."""
    lines: list[str] = []
    line = ""
    for word in d.words(text):
        candidate = f"{line} {word}" if line else word
        if d.text_width(candidate, font) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        while d.text_width(word, font) > width:
            cut = len(word) - 1
            while cut > 1 and d.text_width(word[:cut], font) > width:
                cut -= 1
            lines.append(word[:cut])
            word = word[cut:]
        line = word
    if line:
        lines.append(line)
    return lines
