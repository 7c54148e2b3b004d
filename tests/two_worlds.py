"""Two worlds: one table played twice, differing only in its secrets and PIN.

A :class:`World` is a whole appliance — the store (SQLite, with a fixed
clock), the table session, the box on gpiozero's ``MockFactory`` with luma's
dummy panel, and the web app — seen from a phone on the Wi-Fi (another
address than the box's, the box's own host name).  The box is set up: its
owner chose a password, and it has an installer (a fake
``/opt/companion`` with a version before this one) and a release key, all
in the world's own folder.  Everything such a phone can get with no
credential, with the PIN or with a wrong owner password goes into
``world.seen``: every answer (refusals included, headers and bytes), the
mirror after every step, every event the streams publish, every page,
history, export, CSV and stats, the Update and Backup pages, the release
keys, and the owner's routes (an update, going back, the keys, a restore)
refused.

:class:`Pair` runs the same steps in two worlds.  World B differs from A
only in the values of secret entries (the card a seat picks on the phone,
the cursor moves of a seat picking on the buttons, a Diabolo decision, a
scoreboard number), in the PIN and in the owner's password.  Until a
differing value is *revealed* — after which the worlds rightly part — the
two recordings must be equal, byte for byte.  An entry taken back before
its reveal never parts them.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
import os

from appliance import owner as box_owner, setup
from box_support import MockTable
from web import create_app
from web.auth import PinGuard

URL = "http://192.168.1.20:8000/"
PHONE = {"REMOTE_ADDR": "192.168.1.37"}        # a phone on the table's Wi-Fi
WRONG_PIN = "0000"                             # wrong in both worlds (their PINs differ from it)
NO_CREDENTIAL, WITH_PIN, WITH_WRONG_PIN = "none", "pin", "wrong"
WITH_WRONG_OWNER = "wrong owner"
WRONG_OWNER = "nobody's owner password"        # wrong in both worlds (their passwords differ from it)
RELEASE_KEY = "ed25519 " + "A" * 43 + "= release maker"
# The owner's routes, each with what a phone might send it.
OWNER_ROUTES = (("/api/update", b"bundle bytes"), ("/api/update/back", None),
                ("/api/update/keys", {"add": RELEASE_KEY}), ("/api/backup/restore", b"PK\x03\x04 a backup"))


@functools.cache
def owner_record(password: str) -> str:
    """The owner's hash as appliance/owner.py keeps it, at a small cost:
    the record names its own scrypt cost and the comparison follows it.
    The worlds compare wrong passwords at every look around; what a
    comparison costs is the bench's to measure, not theirs (the real cost
    is tests/web/test_update_web.py's)."""
    salt = b"two worlds, salt"
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=16, r=1, p=1, dklen=32)
    b64 = base64.b64encode
    return f"scrypt$16$1$1${b64(salt).decode()}${b64(digest).decode()}"


def set_up_box(folder) -> dict:
    """A box whose set-up has ended (so it has an owner), with an installer:
    a version before this one and a release key.  Its config's paths, all
    under ``folder``: the machine's own /opt and /etc are never read."""
    setup.mark_done(folder, True)
    prefix = folder / "opt"
    for version in ("1.0", "0.9"):
        (prefix / "releases" / version).mkdir(parents=True)
    os.symlink("releases/1.0", prefix / "current")
    os.symlink("releases/0.9", prefix / "previous")
    keys = folder / "release-keys"
    keys.write_text(RELEASE_KEY + "\n", encoding="utf-8")
    return {"data_dir": str(folder), "update_state": str(folder / "update-root"),
            "update_prefix": str(prefix), "release_keys": str(keys)}


class World:
    """One appliance and the recording of what a phone can get from it."""

    def __init__(self, folder, pin: str, owner_password: str):
        self.clock = [1_800_000_000.0]                       # a fixed, steppable wall clock
        self.table = MockTable(folder, clock=lambda: self.clock[0])
        self.store, self.session, self.box = self.table.store, self.table.session, self.table.box
        config = {"language": "en", "max_streams": 100, "keepalive_s": 15.0, "mock": True, "url": URL}
        config.update(set_up_box(folder))
        box_owner.write_hash(folder, owner_record(owner_password))
        self.app = self.table.app = create_app(self.session, box=self.box, config=config, pin=pin)
        self.box.show_join(URL, pin)
        self.companion = self.app.extensions["companion"]
        self.client = self.app.test_client()
        self.tokens: dict[int, str] = {}
        self.token_numbers = itertools.count()
        self.seen: list = []
        self.published: dict = {"events": []}   # each stream in its own order (the only public one)
        for name in self.published:
            self._record(name, getattr(self.companion, name))

    def _record(self, name, hub) -> None:
        publish = hub.publish

        def recorded(messages):
            messages = list(messages)
            self.published[name].append([data for _version, data in messages])
            publish(messages)
        hub.publish = recorded

    @property
    def pin(self) -> str:
        return self.companion.pin                            # the box's menu may draw a new one

    def close(self) -> None:
        self.table.close()

    # -- what a phone does ---------------------------------------------------
    def headers(self, credential, seat=None) -> dict:
        if credential == WITH_PIN:
            return {"X-Table-Pin": self.pin}
        if credential == WITH_WRONG_PIN:
            return {"X-Table-Pin": WRONG_PIN}
        if credential == WITH_WRONG_OWNER:
            return {"X-Owner-Password": WRONG_OWNER}
        if seat is not None:
            return {"X-Seat-Token": self.tokens.get(seat, "not-a-token")}
        return {}

    def request(self, method, path, body=None, credential=NO_CREDENTIAL, seat=None, record=True):
        """One request from a phone; its answer is recorded unless it belongs to a seat's owner."""
        _TOKEN_NUMBERS[0] = self.token_numbers
        sent = {"data": body} if isinstance(body, bytes) else {"json": body}      # a file (a bundle, a backup) as it is
        response = self.client.open(path, method=method, environ_base=PHONE, **sent,
                                     headers=self.headers(credential, seat), base_url=URL.rstrip("/"))
        data = response.get_data()
        if record:
            headers = sorted((k, v) for k, v in response.headers.items() if k.lower() != "date")
            self.seen.append((method, path, credential, response.status_code, headers, data))
        return response.status_code, data

    def settle(self) -> None:
        """Let the box draw what changed, then look at the mirror and the streams."""
        self.box.flush()
        for name, messages in self.published.items():
            self.seen.append(("published", name, messages[:]))
            messages.clear()
        self.request("GET", "/oled.png?scale=1")


class Pair:
    """Two worlds, A and B, driven step by step; ``parted`` once a differing secret is revealed."""

    PINS = ("1357", "8642")
    OWNER_PASSWORDS = ("Éloïse's owner password", "Marc-Antoine owns box B")

    def __init__(self, folder):
        self.a = World(folder / "a", self.PINS[0], self.OWNER_PASSWORDS[0])
        self.b = World(folder / "b", self.PINS[1], self.OWNER_PASSWORDS[1])
        self.parted = False
        self.cursor_moved_apart = False
        self.compared = 0

    def close(self) -> None:
        self.a.close()
        self.b.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- steps ------------------------------------------------------------------
    def act(self, action_a, action_b=None, credential=WITH_PIN, seat=None):
        """The same request in both worlds but for the secret value (``action_b``)."""
        owner = credential == "token"
        if action_b is not None and not self._may_differ(action_a):
            action_b = action_a                        # only a secret entry that stays secret may differ
        before = self._before()
        ra = self.a.request("POST", "/api/actions", action_a, credential, seat)
        rb = self.b.request("POST", "/api/actions", action_b or action_a, credential, seat)
        self._after(before)
        return ra, rb, owner

    def press(self, key_a, key_b=None):
        """A button pressed on both boxes (``key_b``: what B's holder presses instead)."""
        before = self._before()
        if key_b is not None and key_b != key_a:
            self.cursor_moved_apart = True             # the two holders now point at different cards
        self.a.box.press(key_a)
        self.b.box.press(key_b or key_a)
        self._after(before)

    def claim(self, seat, label=None):
        body = {"name": label} if label else None
        for world in (self.a, self.b):
            status, data = world.request("POST", f"/api/seats/{seat}/claim", body, WITH_PIN)
            if status == 200:
                world.tokens[seat] = json.loads(data)["token"]
        self._after(None)

    def post(self, path, body=None, credential=WITH_PIN, seat=None):
        """The same request, not an action, in both worlds (the turn clock's routes)."""
        before = self._before()
        for world in (self.a, self.b):
            world.request("POST", path, body, credential, seat)
        self._after(before)

    def release(self, seat, credential="token"):
        for world in (self.a, self.b):
            world.request("POST", f"/api/seats/{seat}/release", None, credential, seat)
            world.tokens.pop(seat, None)
        self._after(None)

    def read(self, method, path, credential=NO_CREDENTIAL, seat=None):
        for world in (self.a, self.b):
            world.request(method, path, None, credential, seat)
        self.check()

    def seat_views(self):
        """Each claimed seat's view, where no entry of that seat's own phone differs."""
        differing = self._differing()
        for seat in sorted(set(self.a.tokens) & set(self.b.tokens)):
            mine = {k for k in differing if self._owner(k) == seat and k not in self.a.session.table_entries}
            if not mine:
                self.read("GET", f"/api/seats/{seat}/view", "token", seat)

    def look_around(self):
        """Every page and public read, with no credential and with the PIN."""
        for path in PAGES + tuple(f"/seat/{n}" for n in range(len(self.a.session.players))):
            self.read("GET", path)
        status, data = self.a.request("GET", "/api/history", record=False)
        ids = [g["id"] for g in json.loads(data).get("games", [])] if status == 200 else []
        for game_id in ids:
            for path in (f"/api/history/{game_id}", f"/history/{game_id}",
                         f"/api/history/{game_id}/export.jsonl", f"/api/history/{game_id}/export.csv"):
                self.read("GET", path)
            self.read("GET", f"/api/history/{game_id}/export.jsonl", WITH_PIN)
        for path in ("/api/history/plays.jsonl", "/api/history/plays.csv"):    # BG Stats, spreadsheets
            self.read("GET", path)
        self.read("GET", "/api/history/current")
        self.read("GET", "/api/backup", WITH_PIN)           # the whole box's backup file, bytes and headers
        self.read("GET", "/api/update/keys")                 # the release keys' fingerprints
        self.owner_routes()
        self.read("GET", "/dev")                             # the box's own page: refused to a phone
        for world in (self.a, self.b):
            world.seen.append(("snapshot", world.companion._table_snapshot()))
        self.seat_views()
        self.check()

    def owner_routes(self):
        """The owner's routes, asked with no credential, with the PIN and with a
        wrong owner password: refused alike in both worlds (401, 403, then
        429 and its wait once this phone or the box is throttled), whatever
        each world's owner chose."""
        for credential in (NO_CREDENTIAL, WITH_PIN, WITH_WRONG_OWNER):
            for path, body in OWNER_ROUTES:
                for world in (self.a, self.b):
                    world.request("POST", path, body, credential)
        self.check()

    def _may_differ(self, action) -> bool:
        """Whether ``action`` may take another value in world B: a secret entry
        that stays hidden (not the one that completes a reveal: its value is
        public at once), or an action the core refuses (the refusal must not
        tell either)."""
        from companion.errors import ActionError

        timeline = self.a.session.timeline
        try:
            pending = timeline.check(action)
        except ActionError:
            return True
        if not (pending.step and pending.step.secret):
            return False
        before = set(timeline.state.hidden)
        return (before | set(pending.step.adds)) <= set(pending.step.state.hidden)

    # -- the comparison -------------------------------------------------------------
    def _owner(self, key) -> int:
        return self.a.session.game.secret_owner(key)

    def _differing(self) -> set:
        """Hidden keys whose values differ between the worlds."""
        ha, hb = self.a.session.timeline.state, self.b.session.timeline.state
        if ha is None or hb is None:
            return set()
        ha, hb = ha.hidden, hb.hidden
        return {k for k in ha if k in hb and ha[k] != hb[k]}

    def _before(self):
        timeline = self.a.session.timeline
        hidden = set(timeline.state.hidden) if timeline.state is not None else set()
        return self._differing(), len(timeline.steps), hidden

    def _after(self, before) -> None:
        """Settle both worlds; compare, unless a differing secret was just revealed."""
        differing, steps, hidden_before = before or (set(), 0, None)
        self.a.settle()
        self.b.settle()
        if self.parted:
            return
        timeline = self.a.session.timeline
        undone = len(timeline.steps) < steps          # an undo: what left was taken back, not revealed
        hidden_now = set(timeline.state.hidden) if timeline.state is not None else set()
        revealed = not undone and hidden_before is not None and bool(hidden_before - hidden_now)
        if not undone and differing - hidden_now:
            self.parted = True                        # a differing value is public now: the worlds part here
            return
        if self.cursor_moved_apart and hidden_before is not None and hidden_now != hidden_before:
            # The holders' cursors pointed at different cards: the lock made them
            # an entry (now among the differing ones), or revealed it at once.
            self.cursor_moved_apart = False
            if revealed:
                self.parted = True
                return
        self.check()

    def check(self) -> None:
        """Both recordings so far are equal, byte for byte."""
        if self.parted:
            return
        for n, (mine, theirs) in enumerate(itertools.zip_longest(self.a.seen, self.b.seen), start=self.compared):
            assert mine == theirs, f"output {n} differs between the worlds:\nA: {_short(mine)}\nB: {_short(theirs)}"
        self.compared += len(self.a.seen)
        self.a.seen.clear()
        self.b.seen.clear()


PAGES = ("/api/state", "/api/seats", "/api/notices", "/api/games", "/api/history", "/api/stats",
         "/", "/seat", "/control", "/join", "/history", "/stats", "/backup", "/oled.png", "/oled.png?scale=2",
         "/dev/oled.png", "/dev/frames", "/update", "/api/update", "/setup", "/api/setup")


def _short(item) -> str:
    text = repr(item)
    return text if len(text) < 3000 else text[:3000] + "…"


_TOKEN_NUMBERS = [itertools.count()]


def fixed_tokens(monkeypatch):
    """Seat tokens drawn from one known sequence in each world (random tokens
    would differ between the worlds whatever the secrets)."""
    import web.auth

    monkeypatch.setattr(web.auth.secrets, "token_urlsafe",
                        lambda n=24: f"token-{next(_TOKEN_NUMBERS[0]):04d}")


def fixed_guard_clock(monkeypatch):
    """The PIN guard's clock, shared by both worlds and moved only by the test
    (a refusal's "wait N s" would otherwise depend on how fast each world ran)."""
    now = [1000.0]
    monkeypatch.setitem(PinGuard.__init__.__kwdefaults__, "clock", lambda: now[0])
    return now
