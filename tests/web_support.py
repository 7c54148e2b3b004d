"""Shared helpers of the web tests (no tests here): a stand-in box, an app
factory, a real waitress server on a loopback port, and a raw-socket
server-sent-events client."""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
import time

import pytest

from companion.session import TableSession
from companion.store import Store

PIN = "2468"


class FakeBox:
    """The box contract of notes/adapters-contract.md, without pins or luma."""

    def __init__(self, buttons=("up", "down", "ok", "back")):
        self.button_names = list(buttons)
        self.frame_version = 0
        self.presses: list[tuple[str, str]] = []
        self.joined = None
        self.closed = False
        self._subscribers = []

    def start(self):
        pass

    def close(self):
        self.closed = True

    def _draw(self):
        self.frame_version += 1
        for callback in list(self._subscribers):
            callback(self.frame_version)

    def press(self, name):
        if name not in self.button_names:
            raise KeyError(name)
        self.presses.append((name, "press"))
        self._draw()

    def hold(self, name):
        if name not in self.button_names:
            raise KeyError(name)
        self.presses.append((name, "hold"))
        self._draw()

    @property
    def mirror_version(self):
        return self.frame_version          # every frame of this stand-in is public

    def frame_png(self, scale=2, mirror=True) -> bytes:
        from PIL import Image

        buf = io.BytesIO()
        Image.new("1", (128 * scale, 64 * scale)).save(buf, "PNG")
        return buf.getvalue()

    def subscribe_frames(self, callback, mirror=False):
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def show_join(self, url, pin):
        self.joined = (url, pin)


def make_session(tmp_path) -> TableSession:
    return TableSession(Store(tmp_path))


def make_app(session, *, box=None, pin=PIN, **config):
    from web import create_app

    base = {"language": "en", "max_streams": 100, "keepalive_s": 15.0}
    base.update(config)
    return create_app(session, box=box, config=base, pin=pin)


@pytest.fixture
def app(session):
    """The web app on the test's session, no box; its streams closed at the end."""
    app = make_app(session)
    yield app
    app.extensions["companion"].close()


@pytest.fixture
def client(app):
    return app.test_client()


def pin_headers(pin=PIN) -> dict:
    return {"X-Table-Pin": pin}


@contextlib.contextmanager
def running_server(app, port=0, **config):
    """The app under the production server (web.serve.Server, waitress) on
    a loopback port (0: a free one; a given one may take a moment to be free
    again, as when the box restarts), in a thread; stopped and joined at the end."""
    from web.serve import Server

    settings = {"max_streams": app.extensions["companion"].slots.limit}
    settings.update(config)
    for attempt in range(50):
        try:
            server = Server(app, "127.0.0.1", port, settings)
            break
        except OSError:
            if not port or attempt == 49:
                raise
            time.sleep(0.1)
    with serving(server, "test-server", "the server"):
        yield server


@contextlib.contextmanager
def serving(server, name: str, what: str):
    """``server.serve_forever()`` in a thread called ``name``; stopped and
    joined at the end (``what`` names it if it does not stop)."""
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join(10)
        assert not thread.is_alive(), f"{what} did not stop"


def http(port, method, path, body=None, headers=None, timeout=30.0):
    """One HTTP/1.1 request with http.client: (status, headers, parsed JSON or bytes)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        hdrs = dict(headers or {})
        data = body
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        raw = resp.read()
        kind = resp.getheader("Content-Type", "")
        parsed = json.loads(raw) if kind.startswith("application/json") else raw
        return resp.status, dict(resp.getheaders()), parsed
    finally:
        conn.close()


class SSEClient:
    """A raw-socket event-stream client (HTTP/1.0, so the body is not chunked),
    from ``source`` if given (another loopback address: another phone)."""

    def __init__(self, port, path="/api/events", timeout=30.0, source=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                             source_address=(source, 0) if source else None)
        self.sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        self.eof = False
        self.comments = 0
        self.retry = None

    def body(self) -> bytes:
        """The whole rest of a (non-stream) response."""
        while not self.eof:
            self._fill()
        return self.buf

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            self.eof = True
        self.buf += chunk

    def next_event(self, timeout=30.0):
        """(event, data, id) of the next event; comments and retry are counted."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n\n" in self.buf:
                block, _, self.buf = self.buf.partition(b"\n\n")
                fields = {}
                for line in block.decode("utf-8").split("\n"):
                    if line.startswith(":"):
                        self.comments += 1
                        continue
                    key, _, value = line.partition(":")
                    fields[key] = value[1:] if value.startswith(" ") else value
                if "retry" in fields:
                    self.retry = int(fields["retry"])
                if "data" in fields:
                    return fields.get("event", "message"), json.loads(fields["data"]), fields.get("id")
            if self.eof:
                raise EOFError("the stream ended")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no event in time")
            self.sock.settimeout(left)
            self._fill()

    def next_state(self, timeout=30.0):
        """The next `state` event's data (skipping `seats` events)."""
        while True:
            event, data, _ = self.next_event(timeout)
            if event == "state":
                return data

    def close(self):
        with contextlib.suppress(OSError):
            self.sock.close()


def wait_until(predicate, timeout=30.0, step=0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
