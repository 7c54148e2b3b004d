"""Can a few hostile clients starve the table?  (issue 13, finding 5; issue 21, finding 1)

    .venv/bin/python -m bench --only bench_starve
    .venv/bin/python -m bench.bench_starve [--seconds 10] [--addresses 20] [--per-address 50] [--json]

The appliance (store, table session, a mock box with gpiozero's MockFactory,
the web app under ``web.serve.Server``) runs in a child process.  This
process then plays, on loopback only:

* **the attacker** — ``--addresses`` loopback addresses (127.0.0.11,
  127.0.0.12, ...: each socket is bound to its source) with
  ``--per-address`` connections each, a third of each kind: *slow headers*
  (a request line, then one header byte every second: each byte used to
  reset waitress's idle timer), *idle keep-alives* (one request answered,
  then silence) and *event streams that never read* (``GET /api/events``, no
  byte read).  A connection the server closes or refuses is opened again at
  once (``reopen_s``, 50 ms), as a stubborn attacker would.
* **a phone** from another address (127.0.0.2), which reads ``/api/state``
  and posts an action, each on a new connection, four times a second, and
  opens its event stream every two seconds (opened = a 200 and its first
  ``state`` event);
* **a player on the buttons**: the child drives a mock pin low and times
  the edge until the new frame reaches the display.

The phone's and the buttons' latencies are measured in the same run with no
attack (the baseline), then under attack, then (``spread_attack``, twice as
long) under an attack spread over more addresses than the server has places
(200 addresses x 5 connections: nobody is heavier than a phone, so places
turn over; see docs/security.md).  A request that gets no
answer within 5 s counts as a failure (and as 5 s in the percentiles).
``run()`` returns the figures as a dict; targets are printed, never asserted.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import select
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PIN = "7391"
PHONE_ADDRESS = "127.0.0.2"         # the phone: any loopback address but the attacker's
ATTACKER_ADDRESS = "127.0.0.1"


def hostile_addresses(n: int, first: int = 11) -> list[str]:
    """``n`` loopback addresses for the attacker: 127.0.0.11, 127.0.0.12, ..."""
    assert first + n <= 255, "at most 244 hostile addresses"
    return [f"127.0.0.{first + k}" for k in range(n)]


PHONE_TIMEOUT = 5.0
TARGET_S = 1.0


# -- the appliance (child process) ------------------------------------------------

def serve(data_dir: str) -> None:
    """The appliance with a mock box whose pins this process drives when told
    ``press`` on stdin; answers ``pressed SECONDS`` (edge to display) or
    ``lost``.  Prints ``starve: serving http://127.0.0.1:PORT/`` first."""
    import logging

    from gpiozero.pins.mock import MockFactory
    from luma.core.device import dummy

    from companion import config as cfg
    from companion.session import TableSession
    from companion.store import Store
    from hardware import Box
    from hardware.testing import box_config
    from web import create_app
    from web.serve import Server

    logging.basicConfig(level=logging.ERROR)
    shown = threading.Event()
    stamp = [0.0]

    class TimedDummy(dummy):
        def display(self, image):
            stamp[0] = time.perf_counter()
            super().display(image)
            shown.set()

    config = cfg.load(Path(data_dir))
    config.update(language="en", mock=True)
    store = Store(Path(data_dir))
    session = TableSession(store)
    factory = MockFactory()
    settings = box_config(bounce_ms=2)
    box = Box(session, settings, mock=True, pin_factory=factory,
              display_factory=lambda: TimedDummy(width=128, height=64, mode="1"))
    box.start()
    app = create_app(session, box=box, config=config, pin=PIN)
    server = Server(app, "127.0.0.1", 0, config)
    pins = [factory.pin(settings["buttons"][name]) for name in ("down", "up")]

    def buttons() -> None:
        for n, line in enumerate(sys.stdin):
            if line.strip() != "press":
                break
            pin = pins[n % 2]
            shown.clear()
            started = time.perf_counter()
            pin.drive_low()
            ok = shown.wait(PHONE_TIMEOUT)
            print(f"pressed {stamp[0] - started:.6f}" if ok else "lost", flush=True)
            pin.drive_high()
            box.flush()
            time.sleep(0.005)           # out of the debounce window
        server.stop()

    threading.Thread(target=buttons, daemon=True).start()
    print(f"starve: serving http://127.0.0.1:{server.port}/", flush=True)
    try:
        server.serve_forever()
    finally:
        box.close()
        factory.reset()
        store.close()


PI_CGROUP = Path("/sys/fs/cgroup/cpu/bench-starve-pi")


def pi_speed() -> None:
    """In the child, before exec: join a cgroup of 1/8 of a core (about a Pi
    Zero 2 W's single-thread Python; needs root and cgroup v1's cpu
    controller).  ``--pi`` only: the default run measures this machine."""
    PI_CGROUP.mkdir(exist_ok=True)
    (PI_CGROUP / "cpu.cfs_period_us").write_text("10000")
    (PI_CGROUP / "cpu.cfs_quota_us").write_text("1250")
    (PI_CGROUP / "cgroup.procs").write_text(str(os.getpid()))


class Appliance:
    """The child process above: ``port``, ``press()`` and ``close()``."""

    def __init__(self, extra_config: str = "", pi: bool = False):
        self.pi = pi
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-starve-")
        if extra_config:
            Path(self._tmp.name, "companion.toml").write_text(extra_config)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("NOTIFY_SOCKET", None)
        root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        command = [sys.executable, "-m", "bench.bench_starve", "--serve", self._tmp.name]
        if pi:
            command = ["taskset", "-c", "1"] + command
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=root, preexec_fn=pi_speed if pi else None)
        line = self.proc.stdout.readline()
        if "starve: serving" not in line:
            self.close()
            raise RuntimeError(f"the appliance did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1].strip("/\n"))
        self._lock = threading.Lock()

    def press(self) -> float | None:
        """One press on the mock pins: seconds from the edge to the display."""
        with self._lock:
            self.proc.stdin.write("press\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline().split()
        return float(answer[1]) if answer and answer[0] == "pressed" else None

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
        return float("nan")

    def close(self) -> None:
        try:
            self.proc.stdin.close()         # the child's button loop ends: it stops the server
        except OSError:
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._tmp.cleanup()
        if self.pi:
            try:
                PI_CGROUP.rmdir()           # empty now that the child is gone
            except OSError:
                pass


# -- the phone ------------------------------------------------------------------------

def phone_request(port: int, method: str, path: str, body: dict | None = None,
                  source: str = PHONE_ADDRESS, timeout: float = PHONE_TIMEOUT) -> tuple[int | None, float]:
    """One request on a new connection from ``source``: (status or None, seconds)."""
    headers = {"Host": f"127.0.0.1:{port}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers.update({"Content-Type": "application/json", "X-Table-Pin": PIN})
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - started
    except (OSError, http.client.HTTPException):
        return None, max(time.perf_counter() - started, timeout)
    finally:
        conn.close()


def phone_stream(port: int, source: str = PHONE_ADDRESS, timeout: float = PHONE_TIMEOUT) -> tuple[int | None, float]:
    """Open the event stream from ``source``: (status or None, seconds until
    its status and first ``state`` event arrived), then hang up."""
    started = time.perf_counter()
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    except OSError:
        return None, timeout
    try:
        sock.sendall(f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     "Accept: text/event-stream\r\n\r\n".encode())
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            if not data.startswith(b"HTTP/1.1 200") and b"\r\n\r\n" in data:
                break                               # refused: the status is enough
            if b"event: state" in data and b"\n\n" in data.split(b"event: state", 1)[1]:
                break
        status = int(data[9:12]) if data.startswith(b"HTTP/") else None
        if status == 200 and b"event: state" not in data:
            status = None                           # opened, but no state came
        return status, time.perf_counter() - started
    except (OSError, ValueError):
        return None, max(time.perf_counter() - started, timeout)
    finally:
        sock.close()


def new_game(port: int) -> None:
    status, _ = phone_request(port, "POST", "/api/actions",
                              {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé", "Dan"]})
    if status != 200:
        raise RuntimeError(f"new_game refused: {status}")


def play(appliance: Appliance, seconds: float, rate: float = 4.0, press_every: float = 0.25) -> dict:
    """The phone (GET /api/state, POST an action, alternately, ``rate`` a
    second) and the buttons (a press every ``press_every`` s) for ``seconds``."""
    gets, posts, presses, failures, streams = [], [], [], [], []
    stop = time.monotonic() + seconds
    next_stream = 0.0

    def buttons():
        while time.monotonic() < stop:
            took = appliance.press()
            presses.append(PHONE_TIMEOUT if took is None else took)
            time.sleep(press_every)

    presser = threading.Thread(target=buttons, daemon=True)
    presser.start()
    k = 0
    while time.monotonic() < stop:
        k += 1
        if k % 2:
            status, took = phone_request(appliance.port, "GET", "/api/state")
            gets.append(took)
        else:
            status, took = phone_request(appliance.port, "POST", "/api/actions",
                                         {"type": "add", "seat": k % 4, "points": 1})
            posts.append(took)
        if status != 200:
            failures.append(status)
        if time.monotonic() >= next_stream:         # the phone's page (re)opens its stream
            next_stream = time.monotonic() + 2.0
            status, opened = phone_stream(appliance.port)
            streams.append(opened)
            if status != 200:
                failures.append(f"stream {status}")
            took += opened
        time.sleep(max(0.0, 1 / rate - took))
    presser.join(PHONE_TIMEOUT + 1)
    return {"get": _ms(gets), "post": _ms(posts), "stream_opened": _ms(streams), "press": _ms(presses),
            "failures": len(failures), "failed_statuses": sorted({str(s) for s in failures})}


def _ms(values: list[float]) -> dict:
    if not values:
        return {"samples": 0}
    ordered = sorted(values)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2), "p99_ms": round(p99 * 1000, 2),
            "max_ms": round(ordered[-1] * 1000, 2), "samples": len(ordered)}


# -- the attacker -----------------------------------------------------------------------

class Attack:
    """``count`` hostile connections from ``source``, kept by one selector thread
    (bounded: it stops at :meth:`stop`, at the latest after ``max_seconds``).

    Each slot is one of ``kinds``: ``slow`` (request line, then a header byte
    every ``drip_s``), ``idle`` (one request, then silence) or ``stream``
    (``GET /api/events``, never read: the answer is only peeked at).  A
    connection closed by the server is opened again after ``reopen_s``.
    """

    KINDS = ("slow", "idle", "stream")

    def __init__(self, port: int, count: int = 300, source: str | list[str] = ATTACKER_ADDRESS, kinds=KINDS,
                 drip_s: float = 1.0, reopen_s: float = 0.5, max_seconds: float = 120.0):
        self.port, self.drip_s, self.reopen_s = port, drip_s, reopen_s
        sources = [source] if isinstance(source, str) else list(source)
        # ``count`` connections from each source (one source: ``count`` in all).
        total = count * len(sources) if len(sources) > 1 else count
        self.slots = [{"kind": kinds[(n // len(sources)) % len(kinds)], "source": sources[n % len(sources)],
                       "sock": None, "due": 0.0} for n in range(total)]
        self.stats = {"connects": 0, "closed_by_server": 0, "answers": {}}
        self._selector = selectors.DefaultSelector()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + max_seconds
        self._thread = threading.Thread(target=self._run, name="attack", daemon=True)
        self._thread.start()

    def _open(self, slot: dict, now: float) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.bind((slot["source"], 0))
            sock.connect_ex(("127.0.0.1", self.port))
        except OSError:
            sock.close()
            slot["due"] = now + self.reopen_s
            return
        self.stats["connects"] += 1
        slot.update(sock=sock, state="connecting", opened=now, answer=None, due=now)
        self._selector.register(sock, selectors.EVENT_WRITE, slot)

    def _drop(self, slot: dict, now: float, by_server: bool) -> None:
        sock = slot["sock"]
        if sock is None:
            return
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()
        slot.update(sock=None, due=now + self.reopen_s)
        if by_server:
            self.stats["closed_by_server"] += 1

    def _send(self, slot: dict, data: bytes, now: float) -> None:
        try:
            slot["sock"].send(data)
        except BlockingIOError:
            pass
        except OSError:
            self._drop(slot, now, by_server=True)

    def _started(self, slot: dict, now: float) -> None:
        """Connected: send the slot's opening bytes and watch for answers."""
        host = f"Host: 127.0.0.1:{self.port}\r\n"
        opening = {"slow": f"GET /api/state HTTP/1.1\r\n{host}X-Slow: ",
                   "idle": f"GET /api/state HTTP/1.1\r\n{host}\r\n",
                   "stream": f"GET /api/events HTTP/1.1\r\n{host}Accept: text/event-stream\r\n\r\n"}[slot["kind"]]
        slot.update(state="open", due=now + self.drip_s)
        self._selector.modify(slot["sock"], selectors.EVENT_READ, slot)
        self._send(slot, opening.encode(), now)

    def _readable(self, slot: dict, now: float) -> None:
        sock = slot["sock"]
        try:
            # Streams are never read: peek at the status line only.
            data = sock.recv(65536, socket.MSG_PEEK if slot["kind"] == "stream" else 0)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data and slot["answer"] is None and data.startswith(b"HTTP/"):
            slot["answer"] = data[9:12].decode("latin-1", "replace")
            self.stats["answers"][slot["answer"]] = self.stats["answers"].get(slot["answer"], 0) + 1
        if not data:
            self._drop(slot, now, by_server=True)
        elif slot["kind"] == "stream":
            if slot["answer"] == "200":
                self._selector.unregister(sock)     # held, unread, until the server drops it
                slot["state"] = "held"
            else:
                self._drop(slot, now, by_server=True)   # refused: come back later

    def _run(self) -> None:
        try:
            while not self._stop.is_set() and time.monotonic() < self._deadline:
                now = time.monotonic()
                for slot in self.slots:
                    if slot["sock"] is None and slot["due"] <= now:
                        self._open(slot, now)
                    elif slot["sock"] is not None and slot["kind"] == "slow" and slot.get("state") == "open" \
                            and slot["due"] <= now:
                        slot["due"] = now + self.drip_s
                        self._send(slot, b"a", now)
                    elif slot.get("state") == "held":
                        self._check_held(slot, now)
                for key, events in self._selector.select(timeout=0.05):
                    slot = key.data
                    if slot["sock"] is None:
                        continue
                    if slot["state"] == "connecting":
                        if slot["sock"].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                            self._drop(slot, now, by_server=True)
                        else:
                            self._started(slot, now)
                    else:
                        self._readable(slot, now)
        finally:
            for slot in self.slots:
                self._drop(slot, time.monotonic(), by_server=False)
            self._selector.close()

    def _check_held(self, slot: dict, now: float) -> None:
        """A held stream: did the server hang up?  (POLLRDHUP: its data is
        still unread, so a peek cannot tell.)"""
        if slot["due"] > now:
            return
        slot["due"] = now + 1.0
        poller = select.poll()
        poller.register(slot["sock"], select.POLLRDHUP)
        if poller.poll(0):
            self._drop(slot, now, by_server=True)

    def census(self) -> dict:
        """How many slots are open, and how many opened > 2 s ago never got an answer."""
        now = time.monotonic()
        open_slots = [s for s in self.slots if s["sock"] is not None and s.get("state") != "connecting"]
        unanswered = [s for s in open_slots if s["kind"] != "slow" and s["answer"] is None
                      and now - s["opened"] > 2.0]
        return {"open": len(open_slots), "unanswered_after_2s": len(unanswered)}

    def stop(self) -> dict:
        census = self.census()
        self._stop.set()
        self._thread.join(5)
        return {**self.stats, **census}


# -- the benchmark --------------------------------------------------------------------

def run(seconds: float = 10.0, addresses: int = 20, per_address: int = 50, quick: bool = False,
        pi: bool = False, spread: tuple[int, int] | None = (200, 5)) -> dict:
    """Baseline, then the same phone and buttons under attack from
    ``addresses`` addresses with ``per_address`` connections each, then
    (``spread``: addresses, connections each) under an attack spread over
    more addresses than there are places; the figures (``pi``: the
    appliance at 1/8 of a core, see :func:`pi_speed`)."""
    if quick:
        seconds = min(seconds, 4.0)
    if pi:
        os.sched_setaffinity(0, {0})        # the attacker and the phone: the other core
    sources = hostile_addresses(addresses)
    appliance = Appliance(pi=pi)
    try:
        new_game(appliance.port)
        quiet = play(appliance, seconds)
        attack = Attack(appliance.port, per_address, source=sources, reopen_s=0.05, max_seconds=seconds + 30)
        try:
            time.sleep(3.0)                 # the hostile connections take their places
            census = attack.census()
            under = play(appliance, seconds)
            rss = appliance.rss_mb()
        finally:
            held = attack.stop()
        spread_figures = None
        if spread:
            time.sleep(2.0)                 # the server closes what the first attack left
            many, each = spread
            attack = Attack(appliance.port, each, source=hostile_addresses(many), reopen_s=0.05,
                            max_seconds=seconds * 2 + 30)
            try:
                time.sleep(3.0)
                spread_figures = {"what": f"{many} addresses x {each} connections (more addresses than places)",
                                  **play(appliance, seconds * 2)}
            finally:
                spread_figures["attack"] = attack.stop()
    finally:
        appliance.close()
    worst = max(under[k].get("p99_ms", 0) for k in ("get", "post"))
    return {
        "appliance_cpu": "1/8 core (--pi)" if pi else "unthrottled",
        "what": f"a phone from {PHONE_ADDRESS} (GET /api/state, POST an action, new connection each; its event "
                f"stream opened every 2 s) and mock-pin presses, alone and with {addresses} hostile addresses "
                f"x {per_address} connections ({sources[0]}...{sources[-1]}: slow headers, idle keep-alives, "
                f"unread streams, reopened at once)",
        "no_attack": quiet,
        "under_attack": under,
        "attack": held,
        "attack_held_before_the_phone": census,
        "rss_under_attack_mb": rss,
        "spread_attack": spread_figures,
        "target": f"phone GET/POST p99 < {TARGET_S:g} s under attack, every stream opened, nothing failed",
        "target_met": under["failures"] == 0 and worst < TARGET_S * 1000,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--addresses", type=int, default=20)
    parser.add_argument("--per-address", type=int, default=50)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pi", action="store_true", help="the appliance at 1/8 of a core (root, cgroup v1)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    print(json.dumps(run(args.seconds, args.addresses, args.per_address, quick=args.quick,
                                pi=args.pi), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
