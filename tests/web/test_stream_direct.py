"""Events written straight into idle streams' connections (web.streams.DirectWrite).

Under waitress, a change reaches a phone whose stream thread is idle without
waking that thread: the publisher writes the event into the connection,
framed as the server frames the stream (chunked for HTTP/1.1, raw for
HTTP/1.0).  Real server on loopback, both kinds of client: every state
arrives once, in order, and most of them went the direct way.
"""

from __future__ import annotations

import http.client
import json

from web_support import SSEClient, http as request, make_app, pin_headers, running_server, wait_until


def read_event(response) -> tuple[str, dict, int]:
    """The next event of an HTTP/1.1 (chunked) stream: http.client undoes the chunks."""
    fields: dict = {}
    while True:
        line = response.readline().decode("utf-8")
        if line == "":
            raise EOFError("the stream ended")
        line = line.rstrip("\n")
        if line == "":
            if "data" in fields:
                return fields.get("event", "message"), json.loads(fields["data"]), int(fields.get("id", 0))
            fields = {}
            continue
        if not line.startswith(":"):
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value


def test_states_reach_both_kinds_of_client_once_in_order_mostly_written_directly(session):
    app = make_app(session)
    with running_server(app) as server:
        port = server.port
        status, _, _ = request(port, "POST", "/api/actions", {"type": "new_game", "game": "scoreboard",
                                                              "players": ["Ann", "Ben"]}, pin_headers())
        assert status == 200
        chunked = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        chunked.request("GET", "/api/events", headers={"Accept": "text/event-stream"})
        response = chunked.getresponse()
        assert response.getheader("Transfer-Encoding") == "chunked"
        raw = SSEClient(port)                                  # HTTP/1.0: no chunks
        hub = app.extensions["companion"].events
        assert wait_until(lambda: hub.streams == 2)
        seen_11, seen_10 = [], []
        event = read_event(response)
        while event[0] != "state":
            event = read_event(response)
        seen_11.append(event[2])
        seen_10.append(int(next(e for e in iter(lambda: raw.next_event(), None) if e[0] == "state")[2]))
        for k in range(30):
            status, _, _ = request(port, "POST", "/api/actions", {"type": "add", "seat": k % 2, "points": 1},
                                   pin_headers())
            assert status == 200
        while len(seen_11) < 31:
            event = read_event(response)
            if event[0] == "state":
                seen_11.append(event[2])
        while len(seen_10) < 31:
            event = raw.next_event()
            if event[0] == "state":
                seen_10.append(int(event[2]))
        assert seen_11 == seen_10 == list(range(seen_11[0], seen_11[0] + 31))
        assert session.public()["scores"] == [15, 15]
        with hub._boxes_lock:
            writes = [box.direct.writes for box in hub._boxes]
        assert len(writes) == 2 and all(w >= 15 for w in writes), writes
        raw.close()
        chunked.close()
