"""Bounded costs (issue 13, item 7): the largest game the box stores must
not let clients without a credential slow the table down.

    python -m bench --only bench_costs [--quick]
    python bench/bench_costs.py [--quick]

Stores :data:`companion.limits.STORED_GAMES` copies of the largest allowed
game (``MAX_GAME_LINES`` lines, imported with ``companion import``), starts
the real appliance (``companion run --mock``: waitress, SQLite, the mock box
redrawing its OLED) in a child process, then:

1. makes one of them the game at the table, times every public route on
   it once cold and then warm (median of 9) and records its size (each
   answer is bounded: ``bytes`` beside the game's whole log);
2. **baseline**: a phone's POST of an action (round trip, p50 and p99) with
   no other load, and the server's resident memory;
3. **heaviest route**: the same POSTs while 8 client threads loop on the
   public route that was slowest warm;
4. **cache-defeating**: the same POSTs while 8 client threads cycle through
   the stored games' step pages, more games than the box keeps rendered.

Targets (printed, never asserted): POST p99 under load < 200 ms, the
server's RSS < 150 MB.  ``run()`` returns the figures as a dict.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .bench_idle import end_child, free_port, wait_serving
from .bench_idle import rss_mb as idle_rss_mb

PIN = "0000"
CLIENTS = 8
STORED_GAMES = 5            # more than web.history.STEPS_KEPT: the cache cannot hold them all
PLAYERS = ["Ann", "Ben", "Chloé", "Dan", "Élodie", "François", "Zoë", "Łukasz"]


def largest_game(lines: int, seed: int) -> bytes:
    """A scoreboard log of ``lines`` lines, eight seats: adds, tokens, secret
    rounds and undos (bench_core's mix), the largest game the box stores."""
    from .bench_core import long_log

    return ("\n".join(long_log(lines, seed, PLAYERS, secret_max=20)) + "\n").encode()


def rss_mb(pid: int) -> float:
    return round(idle_rss_mb(pid), 1)


def request(conn, method, path, body=None, headers=None) -> tuple[int, bytes]:
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    return response.status, response.read()


def connect(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _companion(*args) -> list[str]:
    exe = Path(sys.executable).with_name("companion")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "appliance.cli"]


def store_games(data: str, lines: int) -> None:
    for seed in range(STORED_GAMES):
        log = largest_game(lines, seed)
        done = subprocess.run([*_companion(), "import", "-", "--data", data], input=log,
                              capture_output=True, timeout=120)
        if done.returncode:
            raise RuntimeError(f"import failed: {done.stderr.decode()[:300]}")


class Poster:
    """A phone entering actions: one POST every ``every`` seconds, timed."""

    def __init__(self, port: int, every: float = 0.025):
        self.port, self.every = port, every
        self.conn = connect(port)
        status, _ = request(self.conn, "POST", "/api/actions",
                            json.dumps({"type": "new_game", "game": "scoreboard", "players": PLAYERS[:4]}),
                            {"X-Table-Pin": PIN, "Content-Type": "application/json"})
        assert status == 200, status
        self.seat = 0

    def measure(self, seconds: float) -> list[float]:
        latencies = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            body = json.dumps({"type": "add", "seat": self.seat % 4, "points": 1})
            self.seat += 1
            t0 = time.perf_counter()
            status, _ = request(self.conn, "POST", "/api/actions", body,
                                {"X-Table-Pin": PIN, "Content-Type": "application/json"})
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                raise RuntimeError(f"POST refused: {status}")
            time.sleep(max(0.0, self.every - latencies[-1]))
        return latencies


def load(port: int, paths: list[str], stop: threading.Event, counts: list[int]) -> list[threading.Thread]:
    """``CLIENTS`` threads, each looping through ``paths`` (reading every answer)."""
    def loop(offset: int):
        conn = connect(port)
        n = offset
        while not stop.is_set():
            try:
                request(conn, "GET", paths[n % len(paths)])
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = connect(port)
            n += 1
            counts[offset] += 1
        conn.close()
    threads = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(CLIENTS)]
    for thread in threads:
        thread.start()
    return threads


def phase(pid: int, port: int, poster: Poster, seconds: float, paths: list[str] | None) -> dict:
    stop = threading.Event()
    counts = [0] * CLIENTS
    threads = load(port, paths, stop, counts) if paths else []
    peak = [rss_mb(pid)]

    def sample():
        while not stop.is_set():
            peak.append(rss_mb(pid))
            time.sleep(0.1)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    time.sleep(1.0 if paths else 0.0)          # let the load settle
    started = time.perf_counter()
    latencies = poster.measure(seconds)
    elapsed = time.perf_counter() - started
    stop.set()
    for thread in [*threads, sampler]:
        thread.join(30)
    return {"post_p50_ms": round(1000 * statistics.median(latencies), 1),
            "post_p99_ms": round(1000 * percentile(latencies, 0.99), 1),
            "post_max_ms": round(1000 * max(latencies), 1), "posts": len(latencies),
            "load_requests_per_s": round(sum(counts) / elapsed, 1) if paths else 0,
            "rss_peak_mb": max(peak)}


def route_costs(port: int, game_id: int) -> dict:
    """Each public route on the largest game: bytes, first (cold) and warm time."""
    routes = [f"/api/history/{game_id}", f"/history/{game_id}", f"/api/history/{game_id}?from=1000",
              f"/api/history/{game_id}/export.jsonl", f"/api/history/{game_id}/export.csv",
              "/api/history", "/history", "/api/stats", "/stats", "/api/state", "/", "/api/history/current"]
    conn = connect(port)
    # The largest game at the table too: /api/history/current is its whole history.
    status, _ = request(conn, "POST", f"/api/history/{game_id}/resume", headers={"X-Table-Pin": PIN})
    assert status == 200, status
    out = {}
    for path in routes:
        t0 = time.perf_counter()
        status, body = request(conn, "GET", path)
        cold = time.perf_counter() - t0
        warm = []
        for _ in range(9):
            t0 = time.perf_counter()
            request(conn, "GET", path)
            warm.append(time.perf_counter() - t0)
        out[path] = {"status": status, "bytes": len(body), "cold_ms": round(1000 * cold, 1),
                     "warm_ms": round(1000 * statistics.median(warm), 1)}
    conn.close()
    return out


def run(quick: bool = False) -> dict:
    from companion.limits import HISTORY_PAGE_STEPS, MAX_GAME_LINES

    seconds = 4.0 if quick else 10.0
    with tempfile.TemporaryDirectory() as data:
        store_games(data, MAX_GAME_LINES)
        log_bytes = len(largest_game(MAX_GAME_LINES, 0))
        port = free_port()
        env = {**os.environ, "COMPANION_PIN": PIN}
        child = subprocess.Popen([*_companion(), "run", "--mock", "--host", "127.0.0.1", "--port", str(port),
                                  "--data", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            wait_serving(port, timeout=30)
            costs = route_costs(port, 1)
            public = {p: c for p, c in costs.items() if c["status"] == 200}
            heaviest = max(public, key=lambda p: (public[p]["warm_ms"], public[p]["bytes"]))
            poster = Poster(port)
            baseline = phase(child.pid, port, poster, seconds, None)
            heavy = phase(child.pid, port, poster, seconds, [heaviest])
            pages = [f"/api/history/{g}?from={k}" for k in range(0, MAX_GAME_LINES, HISTORY_PAGE_STEPS)
                     for g in range(1, STORED_GAMES + 1)]
            cycling = phase(child.pid, port, poster, seconds, pages)
        finally:
            end_child(child, 10)
    return {
        "largest_game": {"lines": MAX_GAME_LINES, "log_bytes": log_bytes, "stored_games": STORED_GAMES,
                         "history_page_steps": HISTORY_PAGE_STEPS},
        "routes": costs,
        "heaviest_route": heaviest,
        "baseline_no_load": baseline,
        f"{CLIENTS}_clients_on_heaviest_route": heavy,
        f"{CLIENTS}_clients_cycling_every_page_of_every_game": cycling,
        "targets": {"post_p99_ms_under_load": "< 200", "rss_peak_mb": "< 150"},
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2, ensure_ascii=False))
