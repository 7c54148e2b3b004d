#!/usr/bin/python3
"""The VM's command runner: the host's only way in as root (see README.md).

Baked into the test image only (never installed by systemd/install.sh).  It
reads one JSON object per line from the virtio-serial port
``/dev/virtio-ports/companion.agent`` and answers one JSON object per line:

    {"id": 7, "argv": ["systemctl", "is-active", "companion"], "timeout": 30}
    {"id": 8, "sh": "journalctl -u companion | tail", "input": "", "env": {}}
    {"id": 9, "put": "/root/x", "data_b64": "...", "mode": 420}
    {"id": 10, "get": "/var/lib/companion/companion.db"}
 -> {"id": 7, "rc": 0, "stdout": "active\n", "stderr": "", "timed_out": false}
 -> {"id": 10, "rc": 0, "data_b64": "..."}

Each request runs on its own thread, so a long command does not hold up the
others; answers are written whole, one line each, under a lock.  At start it
says {"event": "hello", "uptime": seconds since the kernel started}.
"""

import base64
import json
import os
import subprocess
import sys
import threading
import time

PORT = "/dev/virtio-ports/companion.agent"


def uptime() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def handle(req: dict) -> dict:
    rid = req.get("id")
    try:
        if "put" in req:
            data = base64.b64decode(req.get("data_b64", ""))
            with open(req["put"], "wb") as f:
                f.write(data)
            os.chmod(req["put"], int(req.get("mode", 0o644)))
            return {"id": rid, "rc": 0}
        if "get" in req:
            with open(req["get"], "rb") as f:
                return {"id": rid, "rc": 0, "data_b64": base64.b64encode(f.read()).decode()}
        argv = req["argv"] if "argv" in req else ["/bin/sh", "-c", req["sh"]]
        env = dict(os.environ, PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   LANG="C.UTF-8", HOME="/root")
        env.update(req.get("env") or {})
        timeout = req.get("timeout") or 600
        try:
            run = subprocess.run(argv, input=(req.get("input") or "").encode(), capture_output=True,
                                 timeout=timeout, env=env, cwd=req.get("cwd") or "/root")
            return {"id": rid, "rc": run.returncode, "timed_out": False,
                    "stdout": run.stdout.decode("utf-8", "replace"),
                    "stderr": run.stderr.decode("utf-8", "replace")}
        except subprocess.TimeoutExpired as exc:
            return {"id": rid, "rc": -1, "timed_out": True,
                    "stdout": (exc.stdout or b"").decode("utf-8", "replace"),
                    "stderr": (exc.stderr or b"").decode("utf-8", "replace")}
    except Exception as exc:        # a bad request: say why, keep serving
        return {"id": rid, "rc": -2, "error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    port = sys.argv[1] if len(sys.argv) > 1 else PORT
    fd = os.open(port, os.O_RDWR)
    out_lock = threading.Lock()

    def send(obj: dict) -> None:
        line = (json.dumps(obj) + "\n").encode()
        with out_lock:
            view = memoryview(line)
            while view:
                n = os.write(fd, view)
                view = view[n:]

    def serve(req: dict) -> None:
        send(handle(req))

    send({"event": "hello", "uptime": uptime()})
    buf = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:               # the host is not connected: wait for it
            time.sleep(0.2)
            continue
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError:
                send({"id": None, "rc": -2, "error": "not JSON"})
                continue
            if req.get("ping"):
                send({"id": req.get("id"), "rc": 0, "uptime": uptime()})
                continue
            threading.Thread(target=serve, args=(req,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
