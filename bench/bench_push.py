"""Push latency of the web API: from an accepted action to every phone.

    python bench/bench_push.py [--clients 1,10,50,100] [--pushes 100] [--json]
    python -m bench --only bench_push          (with the project's other benchmarks)

Starts two servers in child processes, under the same waitress settings:

* **companion** — the real appliance (``companion run --mock``: store with
  durable SQLite appends, table session, mock box redrawing its OLED, the
  event hub), with N clients on ``/api/events``;
* **bare** — a minimal Flask app whose ``POST /push`` hands a state-sized
  event to N ``/events`` streams through plain queues: the floor that
  Flask + waitress + loopback TCP cost on this machine.

For each N, every push is one POST; the latency of a client is the time from
just before that POST is sent to the moment the event with the expected id
arrives at that client (so it includes parsing, the SQLite commit, the OLED
redraw and the fan-out).  Reported: median and p99 over all clients and
pushes, the POST round trip, and each server's resident memory (VmRSS) with
the N streams open.  ``run()`` returns the same as a dict.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PIN = "0000"


# -- the bare server (child process) ---------------------------------------------

def serve_bare(max_streams: int) -> None:
    """A minimal Flask SSE app under web.serve's waitress settings."""
    import queue

    from flask import Flask, Response
    from waitress.server import create_server

    from web.serve import waitress_settings

    app = Flask("bare")
    streams: set = set()
    lock = threading.Lock()
    state = {"version": 0}
    # About the size of a Third Man public state.
    payload = json.dumps({"game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"],
                          "hands": [list(range(10))] * 4, "scores": [0, 0, 0, 0], "pad": "x" * 200})

    @app.get("/events")
    def events():
        q: queue.Queue = queue.Queue(maxsize=16)
        with lock:
            streams.add(q)
            first = state["version"]

        def gen():
            try:
                yield b"retry: 2000\n\n"
                yield f"id: {first}\nevent: state\ndata: {payload}\n\n".encode()
                while True:
                    try:
                        yield q.get(timeout=15)
                    except queue.Empty:
                        yield b": keep-alive\n\n"
            finally:
                with lock:
                    streams.discard(q)
        return Response(gen(), mimetype="text/event-stream")

    @app.post("/push")
    def push():
        with lock:
            state["version"] += 1
            message = f"id: {state['version']}\nevent: state\ndata: {payload}\n\n".encode()
            for q in streams:
                try:
                    q.put_nowait(message)
                except queue.Full:
                    pass
        return {"version": state["version"]}

    server = create_server(app, host="127.0.0.1", port=0, **waitress_settings({"max_streams": max_streams}))
    print(f"bare: serving http://127.0.0.1:{server.effective_port}/", flush=True)
    server.run()


# -- the clients (this process) -------------------------------------------------------

class Readers:
    """N raw event-stream sockets read by one selector thread, timestamping
    the first arrival of each event id at each client."""

    def __init__(self, port: int, path: str, count: int):
        self.count = count
        self.arrivals: dict[int, dict[int, float]] = {}
        self.cond = threading.Condition()
        self.selector = selectors.DefaultSelector()
        self.socks = []
        for n in range(count):
            # Each client from its own loopback address, as each phone at a table
            # (the companion lets one address hold only a few streams).
            sock = socket.create_connection(("127.0.0.1", port), source_address=(f"127.0.{n // 250}.{n % 250 + 2}", 0))
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            sock.setblocking(False)
            self.socks.append(sock)
            self.selector.register(sock, selectors.EVENT_READ, [n, b"", False])
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop:
            for key, _ in self.selector.select(timeout=0.2):
                now = time.perf_counter()
                try:
                    data = key.fileobj.recv(262144)
                except BlockingIOError:
                    continue
                if not data:
                    self.selector.unregister(key.fileobj)
                    continue
                record = key.data
                buf = record[1] + data
                if not record[2]:                           # skip the HTTP head once
                    if b"\r\n\r\n" not in buf:
                        record[1] = buf
                        continue
                    buf = buf.split(b"\r\n\r\n", 1)[1]
                    record[2] = True
                *blocks, rest = buf.split(b"\n\n")
                record[1] = rest
                seen = []
                for block in blocks:
                    if block.startswith(b"id: "):
                        seen.append(int(block[4:block.index(b"\n")]))
                if seen:
                    with self.cond:
                        for event_id in seen:
                            self.arrivals.setdefault(event_id, {}).setdefault(record[0], now)
                        self.cond.notify_all()

    def wait_for(self, event_id: int, timeout: float = 10.0) -> dict[int, float]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.arrivals.get(event_id, {})) < self.count:
                left = deadline - time.monotonic()
                if left <= 0:
                    got = len(self.arrivals.get(event_id, {}))
                    raise TimeoutError(f"event {event_id} reached {got} of {self.count} clients")
                self.cond.wait(left)
            return dict(self.arrivals[event_id])

    def first_id(self) -> int:
        """The id every client got on connect (the same for all)."""
        with self.cond:
            self.cond.wait_for(lambda: any(len(v) == self.count for v in self.arrivals.values()), timeout=10)
            return max(k for k, v in self.arrivals.items() if len(v) == self.count)

    def close(self) -> None:
        self._stop = True
        self.thread.join(2)
        for sock in self.socks:
            sock.close()
        self.selector.close()


def _start(cmd, env, marker: str):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    line = proc.stdout.readline()
    if marker not in line:
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
    return proc, port


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def _measure(proc, port, path, post, clients: int, pushes: int) -> dict:
    import http.client

    readers = Readers(port, path, clients)
    try:
        base = readers.first_id()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        latencies, posts = [], []
        for k in range(1, pushes + 1):
            body, headers = post(k)
            started = time.perf_counter()
            conn.request("POST", body[0], body=body[1], headers=headers)
            response = conn.getresponse()
            response.read()
            posts.append(time.perf_counter() - started)
            if response.status != 200:
                raise RuntimeError(f"push refused: {response.status}")
            arrivals = readers.wait_for(base + k)
            latencies.extend(t - started for t in arrivals.values())
        rss = _rss_mb(proc.pid)
        conn.close()
    finally:
        readers.close()
    return {"median_ms": round(statistics.median(latencies) * 1000, 3),
            "p99_ms": round(_p99(latencies) * 1000, 3),
            "post_median_ms": round(statistics.median(posts) * 1000, 3),
            "samples": len(latencies), "rss_mb": rss}


def _add(k):
    action = json.dumps({"type": "add", "seat": k % 4, "points": 1})
    return ("/api/actions", action), {"Content-Type": "application/json", "X-Table-Pin": PIN}


def _push(k):
    return ("/push", b""), {}


def _stop(*procs) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def run(clients=(1, 10, 50, 100), pushes: int = 100, quick: bool = False) -> dict:
    """Measure both servers for each client count; return the numbers
    (``quick``: 20 pushes per client count, for a smoke run).

    Each client count gets fresh servers: a stream whose client has gone
    holds its waitress thread until the server notices (the bare app only
    notices at its next keep-alive write, 15 s later), so reusing the bare
    server would starve the next, larger round of threads."""
    if quick:
        pushes = min(pushes, 20)
    streams = max(clients) + 4
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COMPANION_PIN": PIN}
    env.pop("NOTIFY_SOCKET", None)
    results, idle = [], {}
    for n in clients:
        with tempfile.TemporaryDirectory(prefix="bench-push-") as tmp:
            data = Path(tmp)
            (data / "companion.toml").write_text(f"max_streams = {streams}\n")
            companion, c_port = _start([sys.executable, "-m", "appliance.cli", "run", "--mock", "--host", "127.0.0.1",
                                        "--port", "0", "--data", str(data)], env, "companion: serving")
            bare, b_port = _start([sys.executable, os.path.abspath(__file__), "--serve-bare", str(streams)],
                                  env, "bare: serving")
            try:
                import http.client

                conn = http.client.HTTPConnection("127.0.0.1", c_port, timeout=10)
                new_game = json.dumps({"type": "new_game", "game": "scoreboard",
                                       "players": ["Ann", "Ben", "Chloé", "Dan"]})
                conn.request("POST", "/api/actions", body=new_game,
                             headers={"Content-Type": "application/json", "X-Table-Pin": PIN})
                if conn.getresponse().status != 200:
                    raise RuntimeError("the companion refused new_game")
                conn.close()
                idle = idle or {"companion": _rss_mb(companion.pid), "bare": _rss_mb(bare.pid)}
                results.append({
                    "clients": n,
                    "companion": _measure(companion, c_port, "/api/events", _add, n, pushes),
                    "bare": _measure(bare, b_port, "/events", _push, n, pushes),
                })
            finally:
                _stop(companion, bare)
    report = {
        "what": "push latency: from just before an action's POST to the event at each SSE client",
        "pushes_per_client_count": pushes,
        "max_streams": streams,
        "idle_rss_mb": idle,
    }
    for row in results:
        report[f"clients_{row['clients']}"] = {"companion": row["companion"], "bare": row["bare"]}
    with_50 = [r for r in results if r["clients"] == 50]
    report["target"] = "p99 < 50 ms with 50 clients"
    if with_50:
        report["target_met"] = with_50[0]["companion"]["p99_ms"] < 50
    return report


def _table(report: dict) -> str:
    lines = [f"{report['what']} ({report['pushes_per_client_count']} pushes per row)",
             f"idle RSS: companion {report['idle_rss_mb']['companion']} MB, bare {report['idle_rss_mb']['bare']} MB",
             f"{'clients':>7} | {'companion median/p99 ms':>24} | {'bare median/p99 ms':>19} | {'POST ms':>7} | RSS MB (comp/bare)"]
    for key, row in report.items():
        if not key.startswith("clients_"):
            continue
        c, b = row["companion"], row["bare"]
        lines.append(f"{key[8:]:>7} | {c['median_ms']:>10.2f} / {c['p99_ms']:>9.2f} | "
                     f"{b['median_ms']:>7.2f} / {b['p99_ms']:>7.2f} | {c['post_median_ms']:>7.2f} | "
                     f"{c['rss_mb']} / {b['rss_mb']}")
    if "target_met" in report:
        lines.append(f"target {report['target']}: {'met' if report['target_met'] else 'NOT met'}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="push latency of the web API")
    parser.add_argument("--clients", default="1,10,50,100")
    parser.add_argument("--pushes", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="20 pushes per row")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--serve-bare", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return 0
    report = run(tuple(int(n) for n in args.clients.split(",")), args.pushes, quick=args.quick)
    print(json.dumps(report, indent=1) if args.json else _table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
