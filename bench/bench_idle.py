"""The appliance at rest: cold start, idle CPU and memory with phones connected.

Starts the real ``companion run --mock`` in a child process, measures the time
from spawn to the first answered ``/api/state``, then holds 10 event streams
open and reads the child's CPU time and resident memory from ``/proc`` over
the idle window.  The baseline is a bare Flask+waitress streaming app holding
the same 10 streams, measured the same way in the same run.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BARE_APP = r"""
import sys, time, queue
from flask import Flask, Response
import waitress
app = Flask(__name__)
@app.get("/api/state")
def state():
    return {"game": None}
@app.get("/api/events")
def events():
    def stream():
        q = queue.Queue()
        yield "event: state\ndata: {}\n\n"
        while True:
            try:
                q.get(timeout=15)
            except queue.Empty:
                yield ": keep-alive\n\n"
    return Response(stream(), mimetype="text/event-stream")
waitress.serve(app, host="127.0.0.1", port=int(sys.argv[1]), threads=116, channel_request_lookahead=1, _quiet=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_serving(port: int, timeout: float = 20.0) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/api/state")
            if conn.getresponse().status == 200:
                return time.perf_counter() - t0
        except OSError:
            time.sleep(0.01)
    raise RuntimeError("the server did not start")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def hold_streams(port: int, n: int, stop: threading.Event):
    def one():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/api/events")
            resp = conn.getresponse()
            while not stop.is_set():
                if not resp.fp.readline():
                    break
        except OSError:
            pass
    threads = [threading.Thread(target=one, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def measure(cmd, port: int, idle_s: float, phones: int) -> dict:
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_serving(port)
        start_s = time.perf_counter() - t0  # spawn to the first answered request
        stop = threading.Event()
        hold_streams(port, phones, stop)
        time.sleep(1.0)  # let the streams settle
        cpu0, w0 = cpu_seconds(child.pid), time.perf_counter()
        time.sleep(idle_s)
        cpu1, w1 = cpu_seconds(child.pid), time.perf_counter()
        rss = rss_mb(child.pid)
        stop.set()
        return {"cold_start_s": round(start_s, 3),
                "idle_cpu_percent": round(100 * (cpu1 - cpu0) / (w1 - w0), 3),
                "rss_mb": round(rss, 1)}
    finally:
        end_child(child, 5)


def end_child(child: subprocess.Popen, timeout: float) -> None:
    """Ask ``child`` to end (SIGTERM); kill it if it has not within ``timeout`` seconds."""
    child.terminate()
    try:
        child.wait(timeout)
    except subprocess.TimeoutExpired:
        child.kill()


def run(quick: bool = False) -> dict:
    idle = 10.0 if quick else 60.0
    exe = str(Path(sys.executable).with_name("companion"))
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        app = measure([exe, "run", "--mock", "--host", "127.0.0.1", "--port", str(port), "--data", data],
                      port, idle, 10)
    port = free_port()
    bare = measure([sys.executable, "-c", BARE_APP, str(port)], port, idle, 10)
    return {"idle_window_s": idle, "phones": 10, "companion": app, "baseline_bare_stream_app": bare,
            "targets": {"idle_cpu_percent": "< 1", "rss_mb": "< 60", "cold_start_s": "< 1.5"}}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
