"""The pieces under the event streams: mailboxes, hubs, systemd notify."""

from __future__ import annotations

import socket
import threading
import time

from web_support import make_app, pin_headers
from appliance import sdnotify
from web.streams import KEEPALIVE, Hub, Mailbox, StreamSlots, sse_event


def test_an_event_is_one_json_line_with_its_id():
    assert sse_event("state", {"name": "a\nb", "é": 1}, 7) == \
        'id: 7\nevent: state\ndata: {"name":"a\\nb","é":1}\n\n'.encode()


def test_a_mailbox_wakes_its_reader_at_once():
    # At once: the reader would otherwise sleep out its hour-long wait.
    box = Mailbox(4)
    got = []
    reader = threading.Thread(target=lambda: got.append(box.take(3600)))
    reader.start()
    time.sleep(0.05)
    box.post((1, b"x"))
    reader.join(60)
    assert got == [(1, b"x")]


def test_a_full_mailbox_drops_the_backlog_and_asks_for_the_present():
    slots = StreamSlots(5)
    now = {"version": 0}
    hub = Hub(slots, lambda: [(now["version"], sse_event("state", now, now["version"]))], keepalive=0.05,
              mailbox_size=3)
    stream = hub.open()
    chunks = iter(stream)
    next(chunks)                                           # retry
    assert b'"version":0' in next(chunks)
    for version in range(1, 11):                           # a slow phone misses ten changes
        now["version"] = version
        hub.publish([(version, sse_event("state", dict(now), version))])
    rest = next(chunks)
    assert b'"version":10' in rest                         # straight to the latest state
    assert next(chunks) == KEEPALIVE                       # nothing stale follows
    stream.close()
    assert slots.open == 0 and hub.streams == 0


def test_a_stream_never_started_still_gives_its_slot_back():
    slots = StreamSlots(1)
    hub = Hub(slots, lambda: [])
    stream = hub.open()
    assert hub.open() is None                              # the cap
    stream.close()                                         # the server closes without iterating
    assert slots.open == 0 and hub.open() is not None


def test_closing_the_hub_ends_open_streams_and_refuses_new_ones():
    hub = Hub(StreamSlots(3), lambda: [], keepalive=30)
    stream = hub.open()
    chunks = list_in_thread(stream)
    hub.close()
    chunks.join(60)
    assert not chunks.is_alive()
    assert hub.open() is None
    stream.close()


def list_in_thread(iterable):
    thread = threading.Thread(target=lambda: list(iterable), daemon=True)
    thread.start()
    return thread


def test_events_published_during_a_connect_are_not_sent_twice(session):
    app = make_app(session)
    client = app.test_client()
    client.post("/api/actions", json={"type": "new_game", "game": "scoreboard", "players": ["A"]}, headers=pin_headers())
    response = client.get("/api/events", buffered=False)
    chunks = iter(response.response)
    next(chunks), next(chunks)
    client.post("/api/actions", json={"type": "add", "seat": 0, "points": 1}, headers=pin_headers())
    assert next(chunks).startswith(b"id: 2\nevent: state")
    response.close()
    app.extensions["companion"].close()


# -- systemd notify ----------------------------------------------------------------

def test_notify_is_a_no_op_outside_systemd(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert sdnotify.notify("READY=1") is False
    assert sdnotify.watchdog_interval() is None


def test_notify_sends_datagrams_and_the_watchdog_pings_only_while_alive(tmp_path, monkeypatch):
    path = str(tmp_path / "n.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    listener.settimeout(2)
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    monkeypatch.setenv("WATCHDOG_USEC", "100000")
    assert sdnotify.watchdog_interval() == 0.05
    assert sdnotify.notify("READY=1")
    assert listener.recv(64) == b"READY=1"
    alive = {"yes": True}
    dog = sdnotify.Watchdog(lambda: alive["yes"]).start()
    assert listener.recv(64) == b"WATCHDOG=1"
    alive["yes"] = False
    time.sleep(0.12)
    listener.settimeout(0.01)
    for _ in range(10):                                   # drain pings sent before the stall
        try:
            listener.recv(64)
        except socket.timeout:
            break
    listener.settimeout(0.25)
    try:
        stray = listener.recv(64)
    except socket.timeout:
        stray = None
    assert stray is None, "the watchdog pinged for a stalled loop"
    dog.stop()
    listener.close()


def test_the_watchdog_ignores_another_process_s_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "x"))
    monkeypatch.setenv("WATCHDOG_USEC", "1000000")
    monkeypatch.setenv("WATCHDOG_PID", "1")
    assert sdnotify.watchdog_interval() is None


def test_the_only_public_event_stream_is_the_tables_and_no_route_serves_frame_events(session):
    """docs/security.md and the routes agree (issue 21, finding 7): phones get
    one event stream, /api/events (state, seats, notices); frame events
    exist only on the mock box's /dev/frames, for loopback."""
    from web_support import FakeBox

    for mock, expected in ((False, {"/api/events"}), (True, {"/api/events", "/dev/frames"})):
        app = make_app(session, box=FakeBox(), mock=mock)
        client = app.test_client()
        streams, kinds = set(), set()
        for rule in app.url_map.iter_rules():
            if "GET" not in rule.methods or rule.arguments or rule.rule.startswith("/static"):
                continue
            response = client.get(rule.rule, buffered=False)
            if response.mimetype == "text/event-stream":
                streams.add(rule.rule)
                chunks = iter(response.response)
                for _ in range(2):                  # retry, then the snapshot
                    kinds.update(line.split(b":", 1)[1].strip() for line in next(chunks).split(b"\n")
                                 if line.startswith(b"event:"))
            response.close()
        assert streams == expected
        assert kinds == ({b"state", b"seats", b"frame"} if mock else {b"state", b"seats"})
        app.extensions["companion"].close()
