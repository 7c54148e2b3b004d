"""The API under the production server (waitress) on a loopback port: live
streams, 50 phones at once, the stream cap, hang-ups, shutdown, hostile bytes,
and ``companion run`` itself (PIN, SIGTERM, systemd notify)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys

import pytest

from test_web_support import PIN, SSEClient, http, make_app, pin_headers, running_server, wait_until

SCOREBOARD = {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé"]}


@pytest.fixture
def server(session):
    app = make_app(session, max_streams=60, keepalive_s=30.0)
    with running_server(app) as srv:
        yield srv
    app.extensions["companion"].close()


def companion_of(server):
    return server.app.extensions["companion"]


def test_state_and_actions_over_the_real_server(server):
    assert http(server.port, "GET", "/api/state")[::2] == (200, {"game": None})
    status, headers, body = http(server.port, "POST", "/api/actions", SCOREBOARD, pin_headers())
    assert status == 200 and body["players"] == ["Ann", "Ben", "Chloé"]
    assert headers["Server"] == "companion"
    status, _, body = http(server.port, "POST", "/api/actions", b"{oops", {**pin_headers(), "Content-Type": "application/json"})
    assert status == 400 and "not valid JSON" in body["error"]


def test_a_streaming_client_receives_every_change_at_once(server):
    stream = SSEClient(server.port)
    try:
        assert stream.status == 200 and stream.headers["content-type"].startswith("text/event-stream")
        assert stream.next_state() == {"game": None}
        assert stream.retry == 2000
        http(server.port, "POST", "/api/actions", SCOREBOARD, pin_headers())
        assert stream.next_state(timeout=20)["game"] == "scoreboard"
        for points in (3, 4):
            http(server.port, "POST", "/api/actions", {"type": "add", "seat": 1, "points": points}, pin_headers())
            # At once: before the keep-alive comment (30 s) could push a
            # buffered event out; how fast is bench_push's figure.
            state = stream.next_state(timeout=20)
        assert state["scores"] == [0, 7, 0]
    finally:
        stream.close()


def test_a_browser_like_http11_stream_is_chunked_and_unbuffered(server):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", "/api/events", headers={"Accept": "text/event-stream"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Transfer-Encoding") == "chunked"
    assert resp.readline() == b"retry: 2000\n"
    resp.readline()
    assert resp.readline() == b"id: 0\n"
    conn.close()


def test_fifty_streams_at_once_while_other_requests_answer_quickly(server):
    # Fifty phones, each from its own address (one address holds at most 8 streams).
    streams = [SSEClient(server.port, source=f"127.0.0.{n + 2}") for n in range(50)]
    try:
        for s in streams:
            assert s.status == 200 and s.next_state() == {"game": None}
        assert companion_of(server).events.streams == 50
        for _ in range(20):         # answered (how fast: bench_starve's and bench_push's figures)
            status, _, _ = http(server.port, "GET", "/api/state")
            assert status == 200
        http(server.port, "POST", "/api/actions", SCOREBOARD, pin_headers())
        for s in streams:
            assert s.next_state(timeout=20)["game"] == "scoreboard"
    finally:
        for s in streams:
            s.close()
    assert wait_until(lambda: companion_of(server).slots.open == 0, timeout=20)


def test_the_stream_over_the_cap_gets_a_json_503_and_other_requests_still_work(session):
    app = make_app(session, max_streams=3, keepalive_s=30.0)
    with running_server(app) as srv:
        streams = [SSEClient(srv.port) for _ in range(3)]
        over = SSEClient(srv.port)
        assert over.status == 503
        assert json.loads(over.body()) == {"error": "too many live connections (3): close a page or try again later"}
        assert over.headers["retry-after"]
        assert http(srv.port, "GET", "/api/state")[0] == 200
        streams[0].close()
        assert wait_until(lambda: app.extensions["companion"].slots.open == 2)
        again = SSEClient(srv.port)
        assert again.status == 200
        for s in streams[1:] + [again]:
            s.close()
    app.extensions["companion"].close()


def test_a_phone_that_hangs_up_frees_its_stream_at_once(server):
    # keep-alive is 30 s here: only the hang-up itself can end the stream.
    stream = SSEClient(server.port)
    stream.next_state()
    assert companion_of(server).events.streams == 1
    stream.close()
    # Well before the keep-alive (30 s) would have found the hang-up.
    assert wait_until(lambda: companion_of(server).events.streams == 0, timeout=20)
    assert companion_of(server).slots.open == 0


def test_keep_alive_comments_flow_on_a_quiet_stream(session):
    app = make_app(session, keepalive_s=0.1)
    with running_server(app) as srv:
        stream = SSEClient(srv.port)
        stream.next_state()
        assert stream.next_event()[0] == "seats"
        for _ in range(100):                # comments only, never an event; a generous ceiling
            with pytest.raises(TimeoutError):
                stream.next_event(timeout=0.45)
            if stream.comments >= 3:
                break
        assert stream.comments >= 3
        stream.close()
    app.extensions["companion"].close()


def test_stopping_the_server_ends_every_stream_promptly(session):
    # Promptly: the stop does not wait for the streams' keep-alive (an hour
    # here), so it ends at all; how fast is not a test.
    app = make_app(session, keepalive_s=3600.0)
    streams = []
    with running_server(app) as srv:
        streams = [SSEClient(srv.port) for _ in range(5)]
        for s in streams:
            s.next_state()
    for s in streams:
        with pytest.raises(EOFError):
            while True:
                s.next_event(timeout=60)
        s.close()


_PIN_LINE = b"X-Table-Pin: " + PIN.encode() + b"\r\n"
RAW_HOSTILE = [
    # (bytes sent, status expected)
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /api/state HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 300_000 + b"\r\n\r\n", 431),
    (b"GET /%ff%fe HTTP/1.1\r\nHost: localhost\r\n\r\n", 404),
    (b"BREW /api/state HTTP/1.1\r\nHost: localhost\r\n\r\n", 405),
    # a chunked body beyond the cap
    (b"POST /api/actions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + _PIN_LINE
     + b"Transfer-Encoding: chunked\r\n\r\n" + (b"4000\r\n" + b"x" * 0x4000 + b"\r\n") * 3 + b"0\r\n\r\n", 413),
    # a huge declared body is refused before it is read (waitress's own 413)
    (b"POST /api/actions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n"
     + _PIN_LINE + b"\r\n{", 413),
    (b"POST /api/actions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json; charset=latin-1\r\n"
     b"Content-Length: 9\r\n" + _PIN_LINE + b"\r\n{\"type\":1", 400),
    (b"POST /api/actions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
     + _PIN_LINE + b"\r\n\xff\xff", 400),
]


@pytest.mark.parametrize("raw, expected", RAW_HOSTILE, ids=range(len(RAW_HOSTILE)))
def test_hostile_bytes_get_a_clear_4xx_never_a_500(server, raw, expected):
    http(server.port, "POST", "/api/actions", SCOREBOARD, pin_headers())
    before = http(server.port, "GET", "/api/state")[2]
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    reply = b""
    try:
        try:
            sock.sendall(raw)
        except OSError:
            pass                        # the server may answer before reading it all
        try:
            while b"\r\n\r\n" not in reply and (chunk := sock.recv(65536)):
                reply += chunk
        except OSError:
            pass
    finally:
        sock.close()
    assert reply.startswith(b"HTTP/1."), reply[:200]
    assert int(reply.split(b" ", 2)[1]) == expected, reply[:300]
    assert http(server.port, "GET", "/api/state")[2] == before


# -- companion run: the real command -----------------------------------------------

def start_companion(tmp_path, *extra, env=None):
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    environment.pop("NOTIFY_SOCKET", None) if "NOTIFY_SOCKET" not in (env or {}) else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion.cli", "run", "--host", "127.0.0.1", "--port", "0",
         "--data", str(tmp_path / "data"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, text=True)
    line = proc.stdout.readline()
    match = re.match(r"companion: serving (http://127\.0\.0\.1:(\d+)/)  table PIN (\S+)", line)
    if not match:
        proc.kill()
        raise AssertionError(f"unexpected first line {line!r}; stderr: {proc.stderr.read()}")
    return proc, int(match.group(2)), match.group(3)


def stop_companion(proc, timeout=60):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_companion_run_serves_and_stops_cleanly_on_sigterm_with_a_stream_open(tmp_path):
    # The stream's keep-alive is an hour: a stop within the ceiling did not wait for it.
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "companion.toml").write_text("keepalive_s = 3600.0\n")
    proc, port, pin = start_companion(tmp_path, "--mock", env={"COMPANION_PIN": "4321"})
    try:
        assert pin == "4321"
        assert http(port, "GET", "/api/state")[2] == {"game": None}
        stream = SSEClient(port)
        stream.next_state()
        status, _, state = http(port, "POST", "/api/actions", SCOREBOARD, {"X-Table-Pin": "4321"})
        assert status == 200
        assert stream.next_state(timeout=30) == state
        assert stop_companion(proc, timeout=120) == 0
        with pytest.raises(EOFError):
            while True:
                stream.next_event(timeout=60)
        stream.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in proc.stderr.read()


def test_the_pin_comes_from_the_environment_then_the_config_file_then_chance(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "companion.toml").write_text('pin = "1111"\n')
    env = {k: v for k, v in os.environ.items() if k != "COMPANION_PIN"}
    for extra_env, expected in (({"COMPANION_PIN": "2222"}, "2222"), ({}, "1111")):
        proc, _port, pin = start_companion(tmp_path, env={**env, **extra_env} if extra_env else None)
        assert pin == expected
        stop_companion(proc)
    (data / "companion.toml").unlink()
    from web.serve import table_pin

    pins = {table_pin({"pin": None}) for _ in range(50)}
    assert all(re.fullmatch(r"\d{4}", p) for p in pins) and len(pins) > 1


def test_companion_run_tells_systemd_it_is_ready_and_alive(tmp_path):
    path = str(tmp_path / "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    listener.settimeout(5)
    proc, _port, _pin = start_companion(tmp_path, env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
    try:
        messages = set()
        while not {"READY=1", "WATCHDOG=1"} <= messages:
            messages.add(listener.recv(256).decode())
        assert stop_companion(proc) == 0
        seen = []
        try:
            while True:
                seen.append(listener.recv(256).decode())
        except socket.timeout:
            pass
        assert "STOPPING=1" in seen
    finally:
        if proc.poll() is None:
            proc.kill()
        listener.close()


def test_companion_run_with_the_dev_server_serves_streams_too(tmp_path):
    proc, port, pin = start_companion(tmp_path, "--dev-server")
    try:
        stream = SSEClient(port)
        assert stream.next_state() == {"game": None}
        http(port, "POST", "/api/actions", SCOREBOARD, {"X-Table-Pin": pin})
        # Not in mock mode the pins are tried just after serving, and failing
        # here they post a notice: a table change, announced with the state
        # as it was.  The new game is the first state that is not empty.
        state = stream.next_state(timeout=30)
        while state["game"] is None:
            state = stream.next_state(timeout=30)
        assert state["game"] == "scoreboard"
        stream.close()
    finally:
        assert stop_companion(proc) == 0


def test_a_busy_port_is_a_one_line_error(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        result = subprocess.run([sys.executable, "-m", "companion.cli", "run", "--host", "127.0.0.1",
                                 "--port", str(port), "--data", str(tmp_path)],
                                capture_output=True, text=True, timeout=20)
    finally:
        taken.close()
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
