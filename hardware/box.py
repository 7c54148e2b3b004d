"""The box: buttons and OLED around one table session.

One worker thread owns everything that changes the screen.  It sleeps on a
queue fed by

* the button callbacks (an edge and its :func:`time.monotonic` stamp),
* the session (a change made by a phone or the command line),
* :meth:`Box.show_join` and the display retry thread,

and wakes up early only for its own deadlines (the end of a debounce
window, a long press, a message or a reveal that goes by itself, the
panel's next dim, sleep or move: hardware/panel_care.py).  There is
no polling loop: an idle box costs nothing.  After each item the worker
draws the frame; a frame that differs from the last one gets a new version,
goes to the panel and is announced to :meth:`subscribe_frames` callbacks.

The **mirror** (``GET /oled.png``, for anyone on the network) is a second
frame: the same as the panel's, except while the screen is private (a seat
choosing a secret, the PIN: :meth:`hardware.ui.app.App.is_private`), when it
is the app's public stand-in ("Ben is choosing…", no PIN).  It has its own
version, which moves only when the mirror's pixels change: a cursor moving
over a hand changes nothing there, not even the timing of an event.

In mock mode the pins are gpiozero's ``MockFactory`` pins and the panel is
luma's ``dummy``; :meth:`press` and :meth:`hold` drive the mock pins, so the
same code paths run as on the Pi, and return once the worker has handled the
edges and drawn the new frame.
"""

from __future__ import annotations

import io
import logging
import queue
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from functools import partial

from PIL import Image

from companion.i18n import N_, gettext, set_language

from . import boards
from .buttons import Buttons, Debouncer, gpio_notice
from .display import Screen, i2c_answers, open_device, settings as display_settings, DisplayConfigError
from .draw import HEIGHT, TITLE, WIDTH, Canvas
from .outputs import Outputs
from .panel_care import PanelCare

log = logging.getLogger("hardware.box")

_STOP = object()
WAIT_S = 10.0        # press()/hold() give up after this long (a stuck worker)
STUCK_S = 15.0       # a button down this long is reported stuck (config ``stuck_s``)
NOTICE_S = 30.0      # without buttons, each notice stays this long on the screen

# Notices the box adds to the table (shown on the OLED and the phones).
NO_BUTTONS = N_("The buttons do not work ({error}): use a phone. See the companion's log.")
STUCK = N_("The {button} button seems stuck: it is ignored until it is released.")
BAD_BOARD = N_("The board setting is not one the box knows ({error}): it finds its board by itself meanwhile.")
# The panel until the buttons are live (``pins_later``): nothing on it invites a press.
STARTING = N_("Starting…")


@dataclass(frozen=True)
class Frame:
    """One frame as drawn: its version, the image, the strings drawn on it,
    and whether it shows one seat's private view (a secret being chosen)."""

    version: int
    image: Image.Image
    texts: tuple[str, ...]
    private: bool = False


class Box:
    """``pins_later=True`` (``companion run``): the buttons, LEDs and buzzer,
    and with them the screens (``app``) and the voice, are left out of the
    constructor and :meth:`start`; the panel says "Starting…" until
    :meth:`attach_pins` has claimed the pins on the box's thread, and only
    then shows the table.  gpiozero's import and its pins, the screens'
    modules, are ~30 ms of CPU here, ~0.3 s on a Pi Zero: this way the panel
    lights up and the web side serves that much sooner, and no screen ever
    invites a press that no pin would see."""

    def __init__(self, session, config: dict, mock: bool = False, *, pin_factory=None, display_factory=None,
                 pins_later: bool = False, clock=time.monotonic, i2c_probe=None):
        self.session = session
        self.config = config
        self.mock = mock
        self.bounce_s = max(0.0, float(config.get("bounce_ms", 30))) / 1000
        self.hold_s = float(config.get("hold_s", 1.0))
        # The board (hardware/boards.py): the setting's, or found now.
        # ``i2c_probe()`` says whether an I²C panel answers (a test's
        # stand-in; by default the bus itself, never in mock mode).
        self.board_how = "found"          # or "setting" (the setting or the flag), "trial" (the Setup page's)
        self.keymap = self._choose_board(i2c_probe)
        self.board = self.keymap.board
        self.restart = None               # set by the start sequence: a board not kept restarts the companion
        self.button_names = self.keymap.keys()

        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._cond = threading.Condition()
        # Mock mode: a short press holds this from its low edge to its high
        # one, and the worker's deadlines (a hold reached) wait for it.  A
        # test thread put off for a second between the two edges (a loaded
        # machine) would otherwise make a hold nobody made; a finger is never
        # put off.  Uncontended, hence free, on a box.
        self._short_press = threading.Lock()
        self._posted = 0                  # items put on the queue
        self._done = 0                    # items handled and drawn
        self._holds: Counter = Counter()  # long presses handled and drawn, per button
        self._inline: list = []           # changes made by the worker itself
        self._worker: threading.Thread | None = None
        self._worker_id: int | None = None
        self._unsubscribe = None
        self._frame_callbacks: list = []
        self._mirror_callbacks: list = []
        self._released: dict[str, float] = {}
        self._last_bytes = b""
        self._join: tuple[str, str] | None = None   # for the screens, when they come later
        self._hub = None                  # the club hub's feeder (hub/box.py), likewise
        self._pin_callbacks: list = []              # the screens' (they call them on a new PIN)
        self.frame = Frame(0, Image.new("1", (WIDTH, HEIGHT), 0), ())
        self.mirror = self.frame          # what the web mirror shows (see the module's docstring)
        self.render_times: deque[float] = deque(maxlen=2000)   # seconds per frame drawn
        self.wakeups = 0                  # worker loop turns (stays still while idle)
        # Dims, then sleeps, the panel when nobody touches the table
        # (hardware/panel_care.py); ``clock`` is a fake one in tests.
        self.care = PanelCare(config, clock)

        self.pin_factory = pin_factory
        stuck_s = config.get("stuck_s", STUCK_S)
        self.debouncer = Debouncer(self.bounce_s, self.hold_s, self.keymap.holdable(), stuck_s=stuck_s)
        self.buttons: Buttons | None = None
        self.outputs = _NoOutputs()
        self.pins_ready = threading.Event()      # set once the pins are claimed (or refused)
        if not pins_later:
            self._attach_pins()

        # The panel: never raises here; frames are kept in memory anyway.
        try:
            where = display_settings(config, self.board.panel)
        except DisplayConfigError:
            where = {"retry_s": 5.0, "bus": "i2c", "port": 1, "address": 0x3C, "notice_s": 10.0}
        opener = display_factory or partial(open_device, config, mock, panel=self.board.panel,
                                            factory=lambda: self.pin_factory)
        self.screen = Screen(opener, lambda device: self._post(("display", device)), where["retry_s"],
                             notify=self._screen_notice, where=where,
                             notice_after_s=where["notice_s"])
        self.app = None                   # the screens (hardware/ui/app.py): after the pins
        self.voice = None
        if not pins_later:
            self._build_table()

    def _build_table(self) -> None:
        """The screens and the voice, once the pins are claimed (or refused);
        then the panel shows the table.  Their modules are imported only now."""
        from .ui.app import App
        from .voice import Voice

        app = App(self.session, self.config, chirp=self.outputs.chirp)
        if self.config.get("board_trial"):
            from appliance import board_trial

            from .ui.board_trial import KeepBoard

            app.overlay = KeepBoard(app, self.board.name, float(self.config.get("board_trial_s", board_trial.WINDOW_S)),
                                    keep=lambda: self._board_answer(True), back=lambda: self._board_answer(False))
        app.pin_callbacks = self._pin_callbacks
        app.join = self._join
        app.hub = self._hub
        if self.buttons is None:       # nothing here can dismiss a notice: show each a while
            app.notice_s = float(self.config.get("notice_s", NOTICE_S))
        # Says reveals, round ends and the winner if ``speak`` is on (off by default).
        self.voice = Voice(self.config, notify=self._voice_notice)
        self.app = app
        self.pins_ready.set()

    def _choose_board(self, i2c_probe) -> boards.Keymap:
        """The board's controls for this start (hardware/boards.py): the
        setting's board, or, without one, the candidates an I²C probe
        leaves (mock mode: the wired box, unless a probe is given)."""
        try:
            board = boards.resolve(self.config)
        except (boards.BoardError, TypeError, ValueError) as exc:
            log.error("board setting: %s", exc)
            self.session.update_table(lambda table: table.notices.append((BAD_BOARD, {"error": str(exc)})))
            settings = dict(self.config, board=None)
            board = boards.resolve(settings)
        if board is not None:
            self.board_how = "trial" if self.config.get("board_trial") else "setting"
            return boards.Keymap.of([board])
        if i2c_probe is None and self.mock:
            return boards.Keymap.of([boards.wired(self.config)])
        try:
            where = display_settings(self.config)
            answers = i2c_probe() if i2c_probe is not None else i2c_answers(where["port"], where["address"])
        except Exception as exc:           # never a reason to stop the box: the wired box, as before
            log.warning("looking for an I²C panel failed: %s", exc)
            answers = True
        keymap = boards.Keymap.of(boards.auto_candidates(self.config, answers))
        keymap.decided = not answers       # SPI: the two boards share no pin, nothing to tell
        log.info("board: none set; %s, so %s", "an I²C panel answers" if answers else "no I²C panel answers",
                 keymap.board.id)
        return keymap

    def _attach_pins(self) -> None:
        """Claim the buttons, LEDs and buzzer.  Pins: gpiozero's MockFactory
        in mock mode, passed to each device."""
        config, mock, pin_factory = self.config, self.mock, self.pin_factory
        if pin_factory is None and mock:
            from gpiozero.pins.mock import MockFactory

            pin_factory = self.pin_factory = MockFactory()
        try:
            pins = {name: control.pin for name, control in self.keymap.controls.items()}
            self.buttons = Buttons(pins, pin_factory, self._on_edge, time.monotonic, self.hold_s)
        except Exception as exc:
            # No pin library, no Pi, a pin taken or refused (BadPinFactory,
            # RuntimeError, ImportError...): the box still shows the game and
            # the phones still work; the table is told.
            if mock:
                raise
            log.error("buttons unavailable (%s: %s); the web page still works", type(exc).__name__, exc)
            notice = gpio_notice(exc)
            self.session.update_table(lambda table: table.notices.append(notice))
        if self.buttons is not None:
            for name in self.buttons.devices:
                # held at power-on: disarmed (and reported if it stays down)
                self.debouncer.add(name, self.buttons.level(name), time.monotonic())
        # Never an output on a pin of the board's: refused, and said.
        outputs, refused = boards.refused_outputs(config, self.board)
        notice = boards.refusal_notice(self.board, refused)
        if notice is not None:
            log.error("outputs on the %s's pins are not driven: %s", self.board.id, refused)
            self.session.update_table(lambda table: table.notices.append(notice))
        try:
            self.outputs = Outputs(outputs, pin_factory, strict=mock)
        except Exception as exc:        # Outputs logs its own device errors; this is the import
            if mock:
                raise
            log.error("LEDs/buzzer unavailable: %s: %s", type(exc).__name__, exc)
            self.outputs = _NoOutputs()

    def show_hub(self, feeder) -> None:
        """Hand the club hub's feeder to the screens, on the box's thread
        (they read its status, never the network).  Returns at once; the
        screens built later (``pins_later``) get it too."""
        self._post(("hub", feeder))

    def attach_pins(self) -> None:
        """With ``pins_later``: claim the pins on the box's thread, then show
        the table (returns at once; :attr:`pins_ready` says when it is done).
        A no-op once they are claimed."""
        if not self.pins_ready.is_set():
            self._post(("pins",))

    # -- life -----------------------------------------------------------------------
    def start(self) -> None:
        """Subscribe to the session and start the worker; returns after the first frame."""
        if self._worker is not None:
            return
        self._unsubscribe = self.session.subscribe(self._on_change)
        self._worker = threading.Thread(target=self._run, name="box", daemon=True)
        self._worker.start()
        self._wait(self._post(("refresh",)))

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        worker, self._worker = self._worker, None
        if worker is not None:
            self._queue.put(_STOP)
            worker.join(timeout=5)
        self.screen.close()
        if self.buttons is not None:
            self.buttons.close()
        self.outputs.close()

    # -- what others call -------------------------------------------------------------
    @property
    def frame_version(self) -> int:
        return self.frame.version

    @property
    def mirror_version(self) -> int:
        return self.mirror.version

    def frame_png(self, scale: int = 2, *, mirror: bool = True) -> bytes:
        """A frame as PNG, 128*scale x 64*scale: the mirror's (public), or
        with ``mirror=False`` the panel's own (the mock box's /dev page)."""
        if not isinstance(scale, int) or isinstance(scale, bool) or not 1 <= scale <= 16:
            raise ValueError("scale must be an integer from 1 to 16")
        image = (self.mirror if mirror else self.frame).image
        if scale != 1:
            image = image.resize((WIDTH * scale, HEIGHT * scale), Image.NEAREST)
        out = io.BytesIO()
        image.save(out, "PNG")
        return out.getvalue()

    def subscribe_frames(self, callback, *, mirror: bool = False):
        """``callback(version)`` after each new frame of the panel, or with
        ``mirror=True`` of the mirror (on the box's thread: be quick)."""
        callbacks = self._mirror_callbacks if mirror else self._frame_callbacks
        callbacks.append(callback)

        def unsubscribe():
            if callback in callbacks:
                callbacks.remove(callback)
        return unsubscribe

    def subscribe_pin(self, callback):
        """``callback(pin)`` when a new PIN is drawn from the box's menu (on
        the box's thread: be quick); returns the unsubscribe function."""
        callbacks = self._pin_callbacks
        callbacks.append(callback)

        def unsubscribe():
            if callback in callbacks:
                callbacks.remove(callback)
        return unsubscribe

    def show_join(self, url: str, pin: str) -> None:
        """What the join screen shows: the table's URL (as a QR code) and PIN."""
        self._post(("join", str(url), str(pin)))

    def flush(self) -> None:
        """Wait until everything queued so far (a phone's change...) is handled and drawn."""
        if self._worker is None:
            raise RuntimeError("the box is not started")
        self._wait(self._post(("noop",)))

    def press(self, name: str) -> None:
        """Mock mode: a short press of the key ``name`` (its board's first
        control for it: low past the debounce time, then high); returns
        once handled and drawn.  KeyError: unknown name."""
        if name not in self.button_names:
            raise KeyError(name)
        self._press_input(self.keymap.primary(name))

    def press_pin(self, bcm: int) -> None:
        """Mock mode: a short press of the control on BCM pin ``bcm``, as a
        finger on that board would (a key that does nothing included).
        KeyError: no control of the board's is on that pin."""
        self._press_input(self.keymap.by_pin(bcm))

    def hold_pin(self, bcm: int) -> bool:
        """Mock mode: a long press of the control on BCM pin ``bcm``."""
        return self._hold_input(self.keymap.by_pin(bcm))

    def _press_input(self, name: str) -> None:
        pin = self._mock_pin(name)
        self._settle(name)
        # Up again before waiting for the worker, as a finger would be: a
        # worker busy for a second (a loaded machine) then finds the pin up
        # and sees a short press, never a hold that nobody made.
        with self._short_press:
            pin.drive_low()
            _sleep_until(time.monotonic() + self.bounce_s + 0.001)
            pin.drive_high()
        self._wait_posted()
        self._released[name] = time.monotonic()

    def hold(self, name: str) -> bool:
        """Mock mode: a long press of ``name`` (low for longer than ``hold_s``);
        returns once handled and drawn; False if no long press was seen
        (a button disarmed because it was held at start)."""
        if name not in self.button_names:
            raise KeyError(name)
        return self._hold_input(self.keymap.primary(name))

    def _hold_input(self, name: str) -> bool:
        pin = self._mock_pin(name)
        self._settle(name)
        with self._cond:
            before = self._holds[name]
        low_at = self._drive(pin.drive_low)
        seen = True
        if name in self.debouncer.holdable:
            with self._cond:
                seen = self._cond.wait_for(lambda: self._holds[name] > before, self.hold_s + self.bounce_s + 2)
        else:
            _sleep_until(low_at + self.hold_s + 0.001)
        self._drive(pin.drive_high)
        self._released[name] = time.monotonic()
        return seen

    def _mock_pin(self, name: str):
        if name not in self.keymap.controls:
            raise KeyError(name)
        if self._worker is None:
            raise RuntimeError("the box is not started")
        # A press from the /dev page while the pins are being claimed acts once they are.
        if self.mock and not self.pins_ready.wait(WAIT_S):
            raise TimeoutError("the box's pins were never claimed")
        if not self.mock or self.buttons is None:
            raise RuntimeError("press() and hold() drive mock pins: mock mode only")
        if threading.get_ident() == self._worker_id:
            raise RuntimeError("press() and hold() cannot run on the box's own thread")
        return self.buttons.devices[name].pin

    def _settle(self, name: str) -> None:
        """Let the last release's debounce window pass, so this press is not bounce."""
        released = self._released.get(name)
        if released is not None:
            _sleep_until(released + self.bounce_s + 0.001)

    def _drive(self, drive) -> float:
        """Drive a mock pin (its callbacks run here and queue the edge), then
        wait until the worker has handled it and drawn; returns the time of the edge."""
        drive()
        at = time.monotonic()
        self._wait_posted()
        return at

    def _wait_posted(self) -> None:
        """Until the worker has handled and drawn every input posted so far."""
        with self._cond:
            ticket = self._posted
        self._wait(ticket)

    def _wait(self, ticket: int) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self._done >= ticket, WAIT_S):
                raise TimeoutError("the box did not handle the input in time")

    # -- inputs to the worker ----------------------------------------------------------
    def _post(self, item) -> int:
        with self._cond:
            self._posted += 1
            self._queue.put(item)
            return self._posted

    def _on_edge(self, name: str, pressed: bool, at: float) -> None:
        self._post(("edge", name, pressed, at))

    def _on_change(self, change) -> None:
        # Runs in the submitting thread, under the session lock: only queue it.
        if threading.get_ident() == self._worker_id:
            self._inline.append(change)      # our own action: handled before the next frame
        else:
            self._post(("change", change))

    # -- the worker --------------------------------------------------------------------
    def _run(self) -> None:
        self._worker_id = threading.get_ident()
        set_language(self.config.get("language"))
        while True:
            try:
                item = self._queue.get(timeout=self._timeout())
            except queue.Empty:
                item = None                  # a deadline
            self.wakeups += 1
            if item is _STOP:
                break
            holds: list[str] = []
            try:
                if item is not None:
                    self._handle(item, holds)
                self._due(holds)
                self._render()
            except Exception:  # one bad item must not kill the box
                log.exception("box: handling %r failed", item)
            finally:
                with self._cond:
                    if item is not None:
                        self._done += 1
                    for name in holds:
                        self._holds[name] += 1
                    self._cond.notify_all()

    def _timeout(self) -> float | None:
        app_deadline = self.app.next_deadline() if self.app is not None else None
        deadlines = [t for t in (self.debouncer.next_deadline(), app_deadline) if t is not None]
        care = self.care.next_deadline()
        if care is not None:                 # on the care's own clock
            deadlines.append(time.monotonic() + care - self.care.clock())
        if not deadlines:
            return None                      # sleep until something happens
        # A deadline years away (panel_dim_s = 1e300) must not overflow the wait.
        return min(max(0.0, min(deadlines) - time.monotonic()), threading.TIMEOUT_MAX / 2)

    def _handle(self, item, holds: list[str]) -> None:
        kind = item[0]
        if kind in ("change", "hub", "join"):
            self.care.wake()                 # a phone or the hub changed the table: show it
        if kind == "edge":
            _kind, name, pressed, at = item
            self._dispatch(self.debouncer.edge(name, pressed, at), holds)
        elif kind == "change":
            self._follow(item[1])
        elif kind == "refresh" and self.app is not None:
            self._refresh()
        elif kind == "join":
            self._join = (item[1], item[2])
            if self.app is not None:
                self.app.join = self._join
                from .ui.menus import offer_wifi

                # The box's own Wi-Fi came up: its QR code, once.  Otherwise
                # redraw: an open Phones screen shows the new address, or
                # drops the QR code of a Wi-Fi that went down.
                if not offer_wifi(self.app):
                    self._refresh()
        elif kind == "hub":
            self._hub = item[1]
            if self.app is not None:
                self.app.hub = self._hub
                self._refresh()
        elif kind == "display":
            self.screen.adopt(item[1])
            self.screen.show(self.frame.image)
        elif kind == "pins" and not self.pins_ready.is_set():
            try:
                self._attach_pins()
            finally:                        # tried: the table on the panel all the same
                self._build_table()
                self._refresh()
                log.info("box: pins claimed, the table is on the panel")
        self._drain_inline()

    def _refresh(self) -> None:
        self.app.refresh(None)
        self.voice.previous = self.app.public

    def _due(self, holds: list[str]) -> None:
        now = time.monotonic()
        if self.buttons is not None:
            with self._short_press:          # (see its note in __init__)
                due = self.debouncer.due(now, self.buttons.level)
            self._dispatch(due, holds)
        if self.app is not None:
            self.app.due(now)
        self.care.due(self.care.clock())
        self._drain_inline()

    def _dispatch(self, events, holds: list[str]) -> None:
        for kind, name in events:
            if kind == "press":
                self._tell(name)
            if kind in ("press", "hold") and self.care.wake():
                # It woke a sleeping panel: the player could not see what it would do.
                if kind == "hold":
                    holds.append(name)
                continue
            key = self.keymap.key(name)
            if kind == "press":
                if key is not None:
                    self.app.key(key)
            elif kind == "hold":
                if key is not None:
                    self.app.hold(key)
                holds.append(name)
            else:
                self._stuck(name, kind == "stuck")
            self._drain_inline()

    @staticmethod
    def known_boards() -> list[tuple[str, str]]:
        """Every board the box knows: (id, name marked for translation)."""
        return [(i, boards.NAMES[i]) for i in boards.IDS]

    def _board_answer(self, keep: bool) -> None:
        """"Keep this board?" answered (OK: keep; BACK or the time up: go back)."""
        from appliance import board_trial

        folder = self.config.get("data_dir")
        trial = self.config.pop("board_trial", None)
        if keep:
            if folder and trial:
                board_trial.keep(folder, trial)
            self.board_how = "setting"
            log.info("board: %s kept", trial)
            return
        if folder:
            board_trial.drop(folder)
        log.info("board: %s not kept, back to the board before", trial)
        if self.restart is not None:       # not on the box's own thread: the stop closes the box
            threading.Thread(target=self.restart, name="board-back", daemon=True).start()

    def _tell(self, name: str) -> None:
        """No board set, an I²C panel there: a press on a pin only the
        Bonnet has (its joystick's press, A, B) says the box is a Bonnet."""
        board = self.keymap.tell(name)
        if board is not None:
            self.board = board
            self.debouncer.holdable = self.keymap.holdable()
            log.info("board: a press on GPIO %s: this box is the %s", self.keymap.controls[name].pin, board.id)

    def _stuck(self, name: str, stuck: bool) -> None:
        """Tell the table about a stuck button, and take the notice back once released."""
        control = self.keymap.controls.get(name)
        notice = (STUCK, {"button": control.label if control is not None else name.upper()})
        if stuck:
            log.warning("button %s has been down for %s s: stuck? ignored until released",
                        name, self.debouncer.stuck_s)
            self.session.update_table(lambda table: table.notices.append(notice))
        else:
            log.info("button %s released", name)
            self.session.update_table(lambda table: table.notices.remove(notice)
                                      if notice in table.notices else None)

    def _screen_notice(self, added, removed) -> None:
        """The panel missing for a while (what to check), or back."""
        def change(table):
            if added is not None:
                table.notices.append(added)
            if removed is not None and removed in table.notices:
                table.notices.remove(removed)
        self.session.update_table(change)

    def _drain_inline(self) -> None:
        while self._inline:
            self._follow(self._inline.pop(0))

    def _follow(self, change) -> None:
        """A session change: the screens follow it, then the voice (which
        only starts its process: the worker never waits for it).  Before
        the screens exist there is nothing to follow: they read the table whole."""
        if self.app is None:
            return
        self.app.refresh(change)
        try:
            self.voice.follow(change)
        except Exception:          # the voice is a nicety: never let it stop the screens
            log.exception("the voice failed on %r", change.kind)

    def _voice_notice(self, template: str) -> None:
        """Tell the table once (box and phones) that the box cannot speak."""
        notice = (template, {})
        self.session.update_table(lambda table: table.notices.append(notice)
                                  if notice not in table.notices else None)

    def _render(self) -> None:
        started = time.perf_counter()
        canvas = Canvas()
        if self.app is not None:
            self.app.draw(canvas)
            if getattr(self.session.clock, "running", False):
                # A running turn clock is watched, not idle: the panel stays lit
                # (its screen redraws every second; a paused clock may dim and sleep).
                self.care.wake()
            self.care.long_lived(self.app.long_lived())
            self.care.place(canvas)
        else:
            canvas.center(HEIGHT // 2 - 8, gettext(STARTING), font=TITLE)
        panel, texts = canvas.image, tuple(canvas.texts)
        if not self.care.lit:                # asleep: the frame is the glass, black
            panel, texts = Image.new("1", (WIDTH, HEIGHT), 0), ()
        data = panel.tobytes()
        self.render_times.append(time.perf_counter() - started)
        if self.app is not None:
            self.outputs.show_locked(self.app.locked_seats())
        if data != self._last_bytes or canvas.private != self.frame.private:
            self._last_bytes = data
            self.frame = Frame(self.frame.version + 1, panel, texts, canvas.private)
            if self.care.lit:                # the panel keeps what it held while off
                self.screen.show(panel)
            self._announce(self._frame_callbacks, self.frame.version)
        self.screen.power(self.care.contrast(), self.care.lit)
        self._render_mirror(canvas)

    def _render_mirror(self, canvas: Canvas) -> None:
        """The mirror's frame, after the panel's (the panel waits for nothing)."""
        mirror = canvas
        if self.app is not None and self.app.is_private():
            mirror = Canvas()
            self.app.draw_public(mirror)
        if mirror.image.tobytes() != self.mirror.image.tobytes():
            self.mirror = Frame(self.mirror.version + 1, mirror.image, tuple(mirror.texts))
            self._announce(self._mirror_callbacks, self.mirror.version)

    @staticmethod
    def _announce(callbacks, version: int) -> None:
        for callback in list(callbacks):
            try:
                callback(version)
            except Exception:
                log.exception("frame subscriber %r failed", callback)


class _NoOutputs:
    """No LEDs and no buzzer (their library could not even be loaded)."""

    def show_locked(self, seats) -> None:
        pass

    def chirp(self, times: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)
