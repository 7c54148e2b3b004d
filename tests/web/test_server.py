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
import time

import pytest

from web_support import PIN, SSEClient, http, make_app, pin_headers, running_server, wait_until

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
        [sys.executable, "-m", "appliance.cli", "run", "--host", "127.0.0.1", "--port", "0",
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
    from appliance.runner import table_pin

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
        result = subprocess.run([sys.executable, "-m", "appliance.cli", "run", "--host", "127.0.0.1",
                                 "--port", str(port), "--data", str(tmp_path)],
                                capture_output=True, text=True, timeout=20)
    finally:
        taken.close()
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


# -- a log that no client writes (issue 21, finding 3) ---------------------------------

HOSTILE_PATH = "/x\x1b]0;owned\x07\x1b[2J\r\nWARNING companion.web: the table PIN is 0000"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"     # companion run's (appliance/cli.py)


@pytest.fixture
def log_lines():
    """What companion run's log handler would write, as a list-returning callable."""
    import io
    import logging

    from web.logsafe import BUDGET, install

    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    install(handlers=True)
    BUDGET.reset()
    try:
        yield lambda: buffer.getvalue()
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        BUDGET.reset()


def _clean_log(text: str) -> None:
    """No control character but the newline ending each line, and each line
    one of ours (so none forged)."""
    assert not any(ch != "\n" and not ch.isprintable() for ch in text), repr(text)
    for line in text.splitlines():
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [\w.]+: ", line), line


def test_a_path_that_forges_log_lines_is_logged_as_one_escaped_line(server, log_lines):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=3, source_address=("127.0.0.7", 0))
    try:
        listener = server._listeners[0]
        assert wait_until(lambda: len(listener.active_channels) == 1)
        channel = next(iter(listener.active_channels.values()))
        # The very call waitress makes when a client hangs up mid-answer
        # (waitress/channel.py, HTTPChannel.service).
        channel.logger.info("Client disconnected while serving %s" % HOSTILE_PATH)
    finally:
        sock.close()
    text = log_lines()
    _clean_log(text)
    lines = text.splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("INFO waitress: Client disconnected while serving "
                             "/x\\x1b]0;owned\\x07\\x1b[2J\\r\\nWARNING companion.web: the table PIN is 0000")


def client_gone_before_refusal_is_written(monkeypatch) -> list:
    """Force the race a slow machine meets: each of waitress's own refusals
    finds its client gone as it starts writing.  The network loop closes the
    connection (as when it reads the client's end, or evicts it) while the
    worker waits, then the worker writes.  Returns the list of the refusals
    so overtaken."""
    import threading

    from web.errors import JsonErrorTask

    overtaken = []
    execute = JsonErrorTask.execute

    def late_execute(task):
        closed = threading.Event()

        def close_in_loop():
            task.channel.handle_close()
            closed.set()
        task.channel.server.trigger.pull_trigger(close_in_loop)
        assert closed.wait(10), "the network loop never ran the close"
        overtaken.append(task.channel.connected)
        return execute(task)
    monkeypatch.setattr(JsonErrorTask, "execute", late_execute)
    return overtaken


def test_a_client_gone_before_its_refusal_is_written_leaves_no_trace_in_the_log(server, log_lines, monkeypatch):
    overtaken = client_gone_before_refusal_is_written(monkeypatch)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=3)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Name: \x1b[2J\r\n\r\n")      # refused by waitress itself
    assert wait_until(lambda: overtaken, 10)
    assert overtaken == [False]                                     # gone as its answer is written
    assert sock.recv(100) == b""                                    # closed, no answer
    sock.close()
    assert http(server.port, "GET", "/api/state")[0] == 200
    assert "Traceback" not in log_lines() and "Exception" not in log_lines(), log_lines()


def test_a_loop_of_hostile_requests_closed_at_once_writes_a_bounded_log(server, log_lines, monkeypatch):
    from urllib.parse import quote

    from web.logsafe import LINE_MAX, PER_ADDRESS

    overtaken = client_gone_before_refusal_is_written(monkeypatch)  # every time, whatever the machine's speed
    raw = f"GET {quote(HOSTILE_PATH)}{'A' * 3000} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Name: \x1b[2J\r\n\r\n".encode()
    for n in range(100):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=3, source_address=("127.0.0.8", 0))
        sock.sendall(raw)
        # Gone before the answer is written (the hook), each time: closing
        # here at once would let the loop see the end first, sometimes.
        assert wait_until(lambda: len(overtaken) > n, 10), n
        sock.close()
    assert not any(overtaken)
    for _ in range(300):                            # and 300 streams opened and closed (the audit: 299 lines)
        stream = SSEClient(server.port, source="127.0.0.8")
        stream.close()
    assert http(server.port, "GET", "/api/state")[0] == 200         # the server is fine
    text = log_lines()
    _clean_log(text)
    lines = text.splitlines()
    assert len(lines) <= PER_ADDRESS, lines         # the rest is suppressed (and summarised)
    assert all(len(line) < LINE_MAX + 150 for line in lines)


def test_escapes_cannot_be_forged_with_backslashes():
    from web.logsafe import clean, escape

    assert escape("plain text, é, ♥") == "plain text, é, ♥"
    assert escape("\x1b") == "\\x1b" and escape("\\x1b") == "\\\\x1b"      # ESC and a literal backslash-x-1-b
    assert escape("\u202e\u2028\x85\x7f\t") == "\\u202e\\u2028\\x85\\x7f\\t"
    assert clean("x" * 1200) == "x" * 1000 + "… (200 more characters)"


def test_suppressed_lines_are_summarised_once_a_minute(log_lines):
    import logging

    from web.logsafe import BUDGET, PER_ADDRESS, client_logger

    logger = client_logger(logging.getLogger("waitress"), ("127.0.0.9", 5555))
    for n in range(300):
        logger.info("Client disconnected while serving /api/events %d", n)
    assert len(log_lines().splitlines()) == PER_ADDRESS
    BUDGET.flush(now=time.monotonic() + 61)
    last = log_lines().splitlines()[-1]
    assert "WARNING companion.web: suppressed 295 log lines about 1 client address(es)" in last
    assert "most: 295 about 127.0.0.9" in last


def test_task_queue_warnings_are_held_to_a_budget(log_lines):
    """waitress warns once per queued request while its workers are busy: a
    flood of requests must not become a flood of log lines (seen under load)."""
    import logging

    from web.logsafe import PER_ADDRESS

    for depth in range(300):
        logging.getLogger("waitress.queue").warning("Task queue depth is %d", depth)
    lines = log_lines().splitlines()
    assert 0 < len(lines) <= PER_ADDRESS
    assert all("Task queue depth" in line for line in lines)


def test_a_traceback_is_folded_onto_its_line_and_bounded(log_lines):
    import logging

    from web.logsafe import LINE_MAX

    try:
        raise ValueError("bad\nWARNING forged" + "x" * 5000)
    except ValueError:
        logging.getLogger("companion.web").exception("unexpected error in GET %s", "/a\x1b[2J")
    text = log_lines()
    _clean_log(text)
    (line,) = text.splitlines()
    assert "/a\\x1b[2J | Traceback (most recent call last): | " in line and "ValueError: bad | WARNING forged" in line
    assert len(line) < LINE_MAX + 150


# -- graceful refusals (issue 21, finding 6) -------------------------------------------

def test_a_body_over_the_limit_gets_its_json_413_while_the_client_is_still_sending(server):
    """A client sends 2 MB slowly (the server refuses it after the headers),
    with the serving process's CPU busy, then reads its answer: a JSON 413,
    never a reset."""
    import threading

    busy = threading.Event()

    def burn():
        while not busy.is_set():
            sum(range(10_000))
    burner = threading.Thread(target=burn, daemon=True)
    burner.start()
    try:
        for _ in range(4):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=15)
            body = b"x" * (2 * 1024 * 1024)
            sock.sendall(b"POST /api/actions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         + b"X-Table-Pin: " + PIN.encode() + b"\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode())
            for k in range(0, len(body), 64 * 1024):
                sock.sendall(body[k:k + 64 * 1024])
                time.sleep(0.01)
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
            sock.close()
            head, _, payload = reply.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 413"), reply[:200]
            assert "too large" in json.loads(payload)["error"]
    finally:
        busy.set()
        burner.join(5)
    assert http(server.port, "GET", "/api/state")[0] == 200


def test_companion_runs_log_stays_clean_and_small_under_hostile_requests(tmp_path):
    """The real command's log (its stderr, what journald stores)."""
    from urllib.parse import quote

    proc, port, _pin = start_companion(tmp_path, "--mock")
    try:
        raw = f"GET {quote(HOSTILE_PATH)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
        for _ in range(100):
            sock = socket.create_connection(("127.0.0.1", port), timeout=3, source_address=("127.0.0.8", 0))
            sock.sendall(raw)
            sock.close()
        for _ in range(300):
            SSEClient(port, source="127.0.0.8").close()
        assert http(port, "GET", "/api/state")[0] == 200
    finally:
        assert stop_companion(proc) == 0
    log = proc.stderr.read()
    assert "Traceback" not in log
    assert not any(ch != "\n" and not ch.isprintable() for ch in log), repr(log)
    client_lines = [line for line in log.splitlines() if "127.0.0.8" in line or "serving" in line]
    assert len(client_lines) <= 6, log
