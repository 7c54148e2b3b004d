"""Power cuts and crashes of the whole appliance (issue 9).

* **SIGKILL at random moments.**  The real ``companion run --mock`` runs as a
  child process; a scripted stream of actions goes to it through the web API
  (``POST /api/actions`` with the table PIN) and through the mock buttons
  (``POST /dev/buttons/<name>/press``), and the child is killed with SIGKILL
  at a random moment — during start-up now and then, mostly in the middle of
  the stream.  After each kill the stored log must hold every acknowledged
  action (HTTP 200 received) in order, and after the restart the served state
  must be the replay of the stored log, with no notice of damage: a kill
  never damages the store.
* **A damaged database file** (cut short, pages overwritten with garbage, cut
  to nothing, a garbage header) is detected at start: the companion keeps
  what can be read, moves the damaged file aside, says so on the OLED (a
  notice screen, dismissed with OK) and on the page (``GET /api/notices``,
  the ``notices`` event), and keeps running.

* **Any damage at all** (hypothesis: cut anywhere, bytes scribbled anywhere):
  the store opens, keeps only readable lines, and the table plays on.

``COMPANION_KILL_CYCLES`` sets the number of start–kill cycles (default 20;
CI sets 100).  A cycle costs about one cold start (~0.4 s here) plus up to
0.8 s of actions.  ``COMPANION_DAMAGE_EXAMPLES`` sets the random damages
(default 60; CI sets 300).
"""

from __future__ import annotations

import http.client as httpclient
import io
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from PIL import Image

from companion.session import TableSession
from companion.store import DB_NAME, Store
from companion.timeline import replay
from web_support import SSEClient, http

pytestmark = pytest.mark.slow        # minutes at CI's scale: run first (tests/conftest.py)
CYCLES = int(os.environ.get("COMPANION_KILL_CYCLES", "20"))
PIN = "7319"
PLAYERS = ["Ann", "Ben", "Chloé"]
NEW_GAME = {"type": "new_game", "game": "scoreboard", "players": PLAYERS}
SERVING = re.compile(r"companion: serving http://127\.0\.0\.1:(\d+)/  table PIN (\d+)")
GONE = (ConnectionError, httpclient.HTTPException, OSError)     # the child was killed mid-request


def companion_command() -> list[str]:
    exe = Path(sys.executable).with_name("companion")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "appliance.cli"]


def spawn(data: Path, stderr) -> subprocess.Popen:
    env = {**os.environ, "COMPANION_PIN": PIN, "PYTHONUNBUFFERED": "1"}
    env.pop("NOTIFY_SOCKET", None)
    return subprocess.Popen(companion_command() + ["run", "--mock", "--host", "127.0.0.1", "--port", "0",
                                                   "--data", str(data)],
                            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)


def serving_port(proc) -> int | None:
    """The port from the child's first line, or None if it died first."""
    line = proc.stdout.readline()
    match = SERVING.match(line)
    if match is None:
        return None
    assert match.group(2) == PIN
    return int(match.group(1))


def stored_log(data: Path) -> list[str]:
    """The current game's stored lines, read as the appliance reads them at start."""
    store = Store(data)
    try:
        assert store.warnings == [], f"a SIGKILL damaged the store: {store.warnings}"
        record = store.latest_unfinished()
        return store.lines(record.id) if record else []
    finally:
        store.close()


def exported(data: Path) -> list[str]:
    """The same through the command line (``companion export current``)."""
    result = subprocess.run(companion_command() + ["export", "current", "--data", str(data)],
                            capture_output=True, text=True, timeout=30)
    if result.returncode == 1 and "no stored game" in result.stderr:
        return []
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def post(port: int, path: str, body=None) -> tuple[int, dict]:
    conn = httpclient.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"X-Table-Pin": PIN}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request("POST", path, body=data, headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


class Script:
    """The scripted stream of one cycle: API actions and button sequences,
    sent one after the other until the child dies.  ``acked`` gets every
    action whose request was answered 200, in order."""

    def __init__(self, port: int, rng: random.Random, acked: list[dict], kill_after: int | None = None,
                 kill=None):
        self.port, self.rng, self.acked = port, rng, acked
        self.requests = 0
        # The kill is armed after this many requests (a random moment of the
        # stream, however fast the machine answers), not after a fixed time:
        # on a loaded machine a timer could fire before anything was acknowledged.
        self.kill_after, self.kill = kill_after, kill

    def _counted(self) -> None:
        self.requests += 1
        if self.kill is not None and self.requests >= self.kill_after:
            kill, self.kill = self.kill, None
            kill()

    def action(self, action: dict) -> None:
        status, reply = post(self.port, "/api/actions", action)
        self._counted()
        assert status == 200, (action, status, reply)
        self.acked.append(action)

    def press(self, name: str) -> None:
        status, reply = post(self.port, f"/dev/buttons/{name}/press")
        self._counted()
        assert status == 200 and reply["handled"], (name, status, reply)

    def run(self) -> None:
        rng = self.rng
        try:
            status, state = http(self.port, "GET", "/api/state")[::2]
            if state == {"game": None}:
                self.action(NEW_GAME)
            while True:
                roll = rng.random()
                if roll < 0.45:
                    self.action({"type": "add", "seat": rng.choice([1, 2]), "points": rng.randint(1, 9)})
                elif roll < 0.55:
                    self.action({"type": "token", "seat": rng.choice([1, 2]), "delta": 1})
                elif roll < 0.6:
                    self.action({"type": "undo"})
                else:
                    # On the box: OK on Ann's row, UP n times, OK applies +n.
                    ups = rng.randint(1, 3)
                    for name in ["ok"] + ["up"] * ups:
                        self.press(name)
                    self.press("ok")
                    self.acked.append({"type": "add", "seat": 0, "points": ups})
        except GONE:
            return


def test_sigkill_at_random_moments_loses_no_acknowledged_action(tmp_path):
    rng = random.Random(int(os.environ.get("COMPANION_KILL_SEED", "20240609")))
    data = tmp_path / "data"
    errors = open(tmp_path / "stderr.log", "w+")
    acked: list[dict] = []          # the acknowledged log so far, new_game first
    expected_state = {"game": None}
    starts, checked, in_startup, cold = 0, 0, 0, []
    try:
        for cycle in range(CYCLES):
            started = time.monotonic()
            proc = spawn(data, errors)
            starts += 1
            timer = None
            if rng.random() < 0.1:          # now and then, during start-up (resuming the log)
                in_startup += 1
                timer = threading.Timer(rng.uniform(0.0, 0.5), proc.send_signal, [signal.SIGKILL])
                timer.start()
            port = serving_port(proc)
            if port is not None:
                cold.append(time.monotonic() - started)
                try:
                    state = http(port, "GET", "/api/state")[2]
                    notices = http(port, "GET", "/api/notices")[2]
                except GONE:
                    state = None
                if state is not None:
                    assert state == expected_state, f"cycle {cycle}: the restarted state is not the replay"
                    assert notices == {"notices": []}, f"cycle {cycle}: {notices}"
                    checked += 1
                if timer is None:
                    # After 3-16 requests, within the next 50 ms: mid-request or between two.
                    timers = []

                    def kill(proc=proc, timers=timers):
                        timers.append(threading.Timer(rng.uniform(0.0, 0.05), proc.send_signal, [signal.SIGKILL]))
                        timers[0].start()
                    Script(port, rng, acked, kill_after=rng.randint(3, 16), kill=kill).run()
                    timer = timers[0] if timers else None
                else:
                    Script(port, rng, acked).run()
            if timer is None:                # the stream ended before the kill was armed
                proc.send_signal(signal.SIGKILL)
            else:
                timer.join()
            proc.wait(60)
            proc.stdout.close()
            assert proc.returncode == -signal.SIGKILL, f"cycle {cycle}: exit {proc.returncode}"

            lines = stored_log(data)
            stored = [json.loads(line) for line in lines]
            assert stored[:len(acked)] == acked, f"cycle {cycle}: an acknowledged action is missing"
            assert len(stored) <= len(acked) + 1, "at most the one request in flight may be stored unanswered"
            acked = stored
            expected_state = replay(lines).public() if lines else {"game": None}
            if cycle % 10 == 9:
                assert exported(data) == lines

        # A last clean start: the state is the replay, then a clean stop.
        proc = spawn(data, errors)
        port = serving_port(proc)
        assert http(port, "GET", "/api/state")[2] == expected_state
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        proc.stdout.close()
    finally:
        if "proc" in locals() and proc.poll() is None:
            proc.kill()
        errors.seek(0)
        log = errors.read()
        errors.close()
    assert starts >= CYCLES and checked >= 0.8 * CYCLES, (starts, checked)
    assert len(acked) > 3 * CYCLES, f"too few actions acknowledged to mean anything: {len(acked)}"
    assert "Traceback" not in log, log[-3000:]
    cold.sort()
    print(f"\n{CYCLES} kills ({in_startup} during start-up), {len(acked)} actions stored, "
          f"cold start median {cold[len(cold) // 2]:.3f} s, max {cold[-1]:.3f} s")


# -- a damaged database file -----------------------------------------------------------

def build_store(data: Path) -> list[list[str]]:
    """Three scoreboard games of 150 actions each (several SQLite pages); the
    last is unfinished.  Returns each game's lines."""
    store = Store(data)
    session = TableSession(store)
    for game in range(3):
        session.submit(NEW_GAME)
        for i in range(150):
            session.submit({"type": "add", "seat": i % 3, "points": i % 7 + 1})
    lines = [store.lines(g.id) for g in sorted(store.games(), key=lambda g: g.id)]
    store.close()
    return lines


def damage(path: Path, how: str) -> None:
    rng = random.Random(how)
    data = bytearray(path.read_bytes())
    size = len(data)
    if how == "cut short":
        data = data[: int(size * 0.6) + 123]
    elif how == "garbage pages":
        for page in (size // 4096 // 2, size // 4096 - 2):
            data[page * 4096:(page + 1) * 4096] = rng.randbytes(4096)
    elif how == "cut to nothing":
        data = bytearray()
    elif how == "garbage header":
        data[:100] = rng.randbytes(100)
    path.write_bytes(bytes(data))


def png_pixels(png: bytes) -> bytes:
    return Image.open(io.BytesIO(png)).convert("1").tobytes()


def expected_notice_frame(text: str):
    """The OLED frame of a notice showing ``text``, drawn by an in-process box
    (the child's frame is compared with it pixel for pixel)."""
    import tempfile

    from gpiozero.pins.mock import MockFactory

    from hardware import Box
    from hardware.testing import box_config

    with tempfile.TemporaryDirectory() as folder:
        store = Store(folder)
        session = TableSession(store)
        session.table.notices.append(("{text}", {"text": text}))
        factory = MockFactory()
        box = Box(session, box_config(), mock=True, pin_factory=factory)
        box.start()
        try:
            return box.frame, box.frame_png(1)
        finally:
            box.close()
            factory.reset()
            store.close()


@pytest.mark.parametrize("how", ["cut short", "garbage pages", "cut to nothing", "garbage header"])
def test_a_damaged_database_is_detected_kept_aside_announced_and_the_companion_runs_on(tmp_path, how):
    data = tmp_path / "data"
    games = build_store(data)
    damage(data / DB_NAME, how)
    errors = open(tmp_path / "stderr.log", "w+")
    proc = spawn(data, errors)
    try:
        port = serving_port(proc)
        assert port is not None, "the companion did not start"
        # The page: one notice, in the page's language.
        notices = http(port, "GET", "/api/notices")[2]["notices"]
        assert len(notices) == 1 and notices[0].startswith("The game store was damaged: "), notices
        aside = [p.name for p in data.iterdir() if p.name.startswith(DB_NAME + ".damaged-")]
        assert any(name in notices[0] for name in aside), (notices, aside)
        french = http(port, "GET", "/api/notices?lang=fr")[2]["notices"]
        assert len(french) == 1
        stream = SSEClient(port)
        events = [stream.next_event() for _ in range(3)]
        stream.close()
        assert [e[0] for e in events] == ["state", "seats", "notices"]
        assert events[2][1] == {"notices": notices}

        # What could be read was kept: each game kept is a prefix of its old log,
        # and the served state is the replay of the current one.
        kept = [json.loads(line) for line in exported(data)]
        state = http(port, "GET", "/api/state")[2]
        if kept:
            assert any(kept == [json.loads(x) for x in game[:len(kept)]] for game in games)
            assert state == replay([json.dumps(a) for a in kept]).public()
        else:
            assert state == {"game": None}
        saved = int(re.search(r"(\d+) games were saved", notices[0]).group(1))
        if how in ("cut short", "garbage pages"):
            assert saved >= 1 and kept, "a partly damaged file still gives games back"

        # The OLED: the notice screen, pixel for pixel as the box draws it.
        frame, png = expected_notice_frame(notices[0])
        assert frame.texts[0] == "Notice" and "The game store was" in frame.texts
        assert "OK: dismiss" in frame.texts[-1]
        assert png_pixels(http(port, "GET", "/oled.png?scale=1")[2]) == png_pixels(png)

        # It keeps running: OK dismisses the notice for everyone; play goes on.
        assert post(port, "/dev/buttons/ok/press")[0] == 200
        assert http(port, "GET", "/api/notices")[2] == {"notices": []}
        assert png_pixels(http(port, "GET", "/oled.png?scale=1")[2]) != png_pixels(png)
        if not kept:
            assert post(port, "/api/actions", NEW_GAME)[0] == 200
        status, after = post(port, "/api/actions", {"type": "add", "seat": 2, "points": 5})
        assert status == 200 and after["scores"][2] == (state.get("scores") or [0, 0, 0])[2] + 5
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        errors.seek(0)
        log = errors.read()
        errors.close()
    assert "Traceback" not in log, log[-3000:]
    # The fresh file is sound, and a second start has nothing to say.
    store = Store(data)
    assert store.warnings == []
    store.close()


def test_a_stored_line_that_no_longer_replays_does_not_block_the_table(tmp_path):
    """A flipped bit inside a stored line (not UTF-8, not JSON: SQLite's own
    check does not see it) stops the resume there, with a notice; the table
    then goes on from that point, and what it plays next is stored."""
    data = tmp_path / "data"
    store = Store(data)
    session = TableSession(store)
    session.submit(NEW_GAME)
    for i in range(10):
        session.submit({"type": "add", "seat": i % 3, "points": i + 1})
    game_id = session.game_id
    store.close()
    db = sqlite3.connect(data / DB_NAME)
    db.execute("UPDATE actions SET line = CAST(x'7b2274797065ff' AS TEXT) WHERE game_id = ? AND seq = 7", (game_id,))
    db.commit()
    db.close()

    store = Store(data)
    session = TableSession(store)
    assert session.table.notices == [("Game {id} came back only up to its step {n}: the steps after it could not be read.",
                                      {"id": game_id, "n": 6})]
    before = session.public()["scores"]
    session.submit({"type": "add", "seat": 0, "points": 100})       # refused before: line 7 was taken
    assert session.public()["scores"][0] == before[0] + 100
    store.close()

    store = Store(data)
    session = TableSession(store)
    assert session.public()["scores"][0] == before[0] + 100, "the action after the resume is stored"
    assert len(store.lines(game_id)) == 11, "the damaged game keeps its lines for export"
    store.close()


# -- any damage at all: the store opens, keeps prefixes, and says so -------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_PRISTINE: dict = {}


def pristine(tmp_root: Path):
    """One built store, copied for every example (building it is the slow part)."""
    if "bytes" not in _PRISTINE:
        folder = tmp_root / "pristine"
        _PRISTINE["games"] = build_store(folder)
        _PRISTINE["bytes"] = (folder / DB_NAME).read_bytes()
    return _PRISTINE["games"], _PRISTINE["bytes"]


@settings(max_examples=int(os.environ.get("COMPANION_DAMAGE_EXAMPLES", "60")), deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(cut=st.one_of(st.none(), st.floats(0, 1)),
       scribbles=st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=600)), max_size=4))
def test_any_damage_opens_keeps_only_true_prefixes_and_says_so(tmp_path_factory, cut, scribbles):
    games, original = pristine(tmp_path_factory.getbasetemp())
    data = bytearray(original)
    if cut is not None:
        data = data[: int(len(data) * cut)]
    for where, junk in scribbles:
        at = int(len(data) * where)
        data[at:at + len(junk)] = junk
    folder = tmp_path_factory.mktemp("damaged")
    (folder / DB_NAME).write_bytes(bytes(data))

    store = Store(folder)                 # never raises
    try:
        session = TableSession(store)
        damaged = store.warnings != []
        if damaged:
            assert any(p.name.startswith(DB_NAME + ".damaged-") for p in folder.iterdir())
        for record in store.games():
            kept = store.lines(record.id)
            if damaged:
                # Salvaged: readable lines only, each game cut before its first bad one...
                assert kept and all(isinstance(json.loads(line), dict) for line in kept)
                if not scribbles:
                    # ...and with nothing scribbled over, exactly the start of an original game.
                    assert any(kept == game[:len(kept)] for game in games)
            # (Undamaged by SQLite's measure, a scribble inside a stored line
            # may change it: the session then resumes up to it, as tested above.)
        if session.timeline.started:
            assert session.public() == replay(store.lines(session.game_id)).public()
        session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
        session.submit({"type": "add", "seat": 0, "points": 1})      # and it works on
    finally:
        store.close()
