"""The turn clock on the box: its set-up, its screen, its one timer.

The clock itself lives in the core (``companion/clock.py``, the session's
``clock``); these screens only show it and hand the buttons to it:

* :class:`ClockSetup` — mode, time per seat, increment or delay, Start;
* :class:`ClockScreen` — the running seat's time large, the others small.
  OK ends the running seat's turn (in a game with its own turn order OK
  goes back to the game to enter the move: the move hands the clock on);
  BACK pauses, and BACK again leaves the clock paused; a long BACK is the
  table's undo, which gives the last handover back.

No polling: :func:`arm` keeps one app timer, due when the running seat's
shown second changes while the clock screen is up, else only when its bank
would run out; none while the clock stands.  When it is due the session
looks for a bank that ran out (:meth:`TableSession.clock_tick`), which the
log keeps and :func:`follow` says with a message, the buzzer and the
seat's LED.
"""

from __future__ import annotations

from companion import clock as tc
from companion.errors import CompanionError
from companion.i18n import N_, _, gettext, translate_error

from .. import draw as d
from ..draw import Canvas
from .base import hint_line, short_name
from .common import Layer, ListLayer

MODE_NAMES = {"sudden": N_("Sudden death"), "fischer": N_("Fischer"), "delay": N_("Delay")}
MINUTES = (1, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120)
SECONDS = (0, 2, 3, 5, 10, 15, 20, 30, 60)
TIMER = "turn-clock"


def _choice(app) -> dict:
    if not hasattr(app, "clock_choice"):
        app.clock_choice = {"mode": "fischer", "minutes": 10, "seconds": 5}
    return app.clock_choice


def _cycle(values, value):
    return values[(values.index(value) + 1) % len(values)] if value in values else values[0]


class ClockSetup(ListLayer):
    """Mode, time, increment/delay: OK on a row takes its next value; OK on
    Start sets the clock for every seat and starts it."""

    @property
    def title(self) -> str:
        return _("Turn clock")

    def _entries(self):
        c = _choice(self.app)
        rows = [(_("Mode"), gettext(MODE_NAMES[c["mode"]]), "mode"),
                (_("Time"), _("{n} min", n=c["minutes"]), "minutes")]
        if c["mode"] != "sudden":
            label = _("Increment") if c["mode"] == "fischer" else _("Delay")
            rows.append((label, _("{n} s", n=c["seconds"]), "seconds"))
        rows.append((_("Start"), "\u25b8", "start"))
        return rows

    def rows(self):
        return [(label, right) for label, right, _key in self._entries()]

    def pick(self, index):
        c = _choice(self.app)
        key = self._entries()[index][2]
        if key == "mode":
            c["mode"] = _cycle(tuple(tc.MODES), c["mode"])
        elif key == "minutes":
            c["minutes"] = _cycle(MINUTES, c["minutes"])
        elif key == "seconds":
            c["seconds"] = _cycle(SECONDS, c["seconds"])
        else:
            try:
                self.app.session.clock_set(c["mode"], c["minutes"] * 60_000, c["seconds"] * 1000, "buttons")
            except CompanionError as exc:
                self.app.show_message(translate_error(exc, self.app.language))
                return
            self.app.close_layers()
            self.app.push(ClockScreen(self.app))


class ClockScreen(Layer):
    long_lived = True           # up for a whole game: moves by a pixel now and then (panel care)

    def key(self, name: str) -> None:
        session = self.app.session
        clock = session.clock
        if name == "back":
            if not session.clock_pause():
                self.app.pop()                  # standing already: leave it standing
            return
        if name in ("up", "down"):
            self.app.push(ClockSetup(self.app))
            return
        if name != "ok":
            return
        record = clock.record
        if record is None:
            self.app.push(ClockSetup(self.app))
            return
        followed = self.app.public.get("game") in tc.FOLLOWED
        if followed:
            session.clock_resume()
            self.app.close_layers()             # to the game: its move hands the clock on,
            self.app.clock_return = True        # and the clock comes back with it
            return
        if record["turn"] is not None and not clock.running:
            session.clock_resume()
            return
        try:
            session.clock_end_turn(None, "buttons")
        except CompanionError as exc:
            self.app.show_message(translate_error(exc, self.app.language))

    def draw(self, c: Canvas) -> None:
        clock = self.app.session.clock
        record = clock.record
        players = list(self.app.public.get("players") or [])
        if record is None:
            c.header(_("Turn clock"))
            c.center(22, _("No clock set"), d.STRONG)
            hint_line(c, _("OK: set a clock"))
            return
        turn = record["turn"]
        followed = self.app.public.get("game") in tc.FOLLOWED
        flagged = [s for s, ms in enumerate(record["banks"]) if ms <= 0]
        shown = turn if turn is not None else (flagged[-1] if flagged else 0)
        name = players[shown] if shown < len(players) else "?"
        self._header(c, name, players, record)
        left = clock.remaining_ms(shown)
        if turn is None:
            c.center(16, _("Time up!") if left <= 0 else tc.format_ms(left), d.BIG)
        else:
            c.center(15, tc.format_ms(left), d.HUGE)
        c.center(39, self._others(players, record, shown), d.SMALL)
        if turn is None:
            hint = _("OK: next · BACK: leave")
        elif not clock.running:
            hint = _("Paused · OK: go on")
        elif followed:
            hint = _("OK: move · BACK: pause")
        else:
            hint = _("OK: next · BACK: pause")
        hint_line(c, hint)

    @staticmethod
    def _header(c: Canvas, name: str, players, record) -> None:
        """The shown seat's name, whole if it can be, and the mode at the
        right: in words while both fit, else only its figure ("+5s"), else
        the name gives way (abbreviated, never cut)."""
        extra = record["extra"] // 1000
        figure = "" if record["mode"] == "sudden" else (f"+{extra}s" if record["mode"] == "fischer" else f"{extra}s")
        words = gettext(MODE_NAMES[record["mode"]]) + (f" {figure}" if figure else "")
        room = d.WIDTH - 2 * d.MARGIN - 4
        for mode in (words, figure):
            if d.text_width(name, d.SMALL) + d.text_width(mode, d.SMALL) <= room:
                c.header(name, mode)
                return
        c.header(short_name(name, players, room - d.text_width(figure, d.SMALL), d.SMALL), figure)

    def _others(self, players, record, shown) -> str:
        """The next seats in turn order after the one shown, with their time,
        as many as fit whole; "+N" says how many more there are."""
        seats = len(record["banks"])
        width = d.WIDTH - 2 * d.MARGIN
        line = ""
        for k in range(1, seats):
            seat = (shown + k) % seats
            name = short_name(players[seat], players, 42, d.SMALL) if seat < len(players) else "?"
            part = f"{name} {tc.format_ms(self.app.session.clock.remaining_ms(seat))}"
            candidate = f"{line}  {part}" if line else part
            more = seats - 1 - k
            tail = f" (+{more})" if more else ""
            if d.text_width(candidate + tail, d.SMALL) > width:
                return f"{line} (+{seats - k})" if line else part
            line = candidate
        return line


def open_clock(app) -> None:
    """Menu → Turn clock: the clock if one is set, else its set-up."""
    app.push(ClockScreen(app) if app.session.clock.record is not None else ClockSetup(app))


def arm(app) -> None:
    """Keep the one clock timer right (called before every frame)."""
    clock = app.session.clock
    if not clock.running or clock.record is None or clock.record["turn"] is None:
        app.cancel_timer(TIMER)
        return
    if app.layers and isinstance(app.layers[-1], ClockScreen):
        wait = clock.until_next_second()
    else:
        wait = clock.remaining_ms(clock.record["turn"]) / 1000 + 0.001
    app.set_timer(TIMER, max(0.0, wait or 0.0), lambda: app.session.clock_tick())


def follow(app, change) -> None:
    """Bring the clock back once a move handed it on (a game with its own
    turns, the table went from the clock to the game to enter the move);
    say a bank that ran out: a message, three chirps (the seat's LED is lit
    through :func:`flagged_seats`)."""
    if change is not None and change.kind in ("new_game", "resume"):
        app.clock_return = False
    if (change is not None and change.kind == "action" and change.clock and getattr(app, "clock_return", False)
            and change.clock["turn"] != (getattr(app, "clock_turn", None))):
        app.clock_return = False
        if not app.layers:
            app.push(ClockScreen(app))
    if change is None or change.kind != "clock" or change.action_type != "clock" or not change.clock:
        return
    record = change.clock
    if record["turn"] is not None:
        return
    before = getattr(app, "clock_banks", None) or []
    out = [s for s, ms in enumerate(record["banks"]) if ms <= 0 and (s >= len(before) or before[s] > 0)]
    players = change.state.get("players") or []
    for seat in out:
        app.chirp(3)
        app.show_message(_("{name}: time is up!", name=players[seat] if seat < len(players) else "?"))


def remember(app, change) -> None:
    """What the clock was at the last change (to tell what moved)."""
    if change is not None and change.clock:
        app.clock_banks = list(change.clock["banks"])
        app.clock_turn = change.clock["turn"]
    elif change is not None and change.kind in ("new_game", "resume"):
        app.clock_banks, app.clock_turn = [], None


def flagged_seats(app) -> set[int]:
    record = app.session.clock.record
    if record is None:
        return set()
    return {s for s, ms in enumerate(record["banks"]) if ms <= 0}
