"""Hostile HTTP input against the web API (issue 9), with hypothesis.

Two twin tables run side by side (Flask's test client, a stand-in box in mock
mode).  Both hold the same Third Man game with a bid under way: Ann led 5
face up, Ben and Chloé entered their cards secretly — 3 and 7 at table A,
8 and 2 at table B — Dan has not bid yet; every seat is claimed by a phone.
Each example sends one random request (any method, known and unknown paths,
path parameters of every type, query strings, right/wrong/garbage PINs and
seat tokens, content types, bodies of every shape: random JSON, truncated
JSON, huge, binary, not UTF-8, NaN, too deep) to both tables, and checks:

* never a 5xx, never a traceback; every refusal of ``/api/*`` is a one-line
  JSON ``{"error": ...}``;
* a refusal (and any read) leaves the stored game as it was: the same log
  length, the same public state byte for byte, the same claims and notices;
* **secrecy, structurally**: unless the request carries the token of a seat
  whose card is hidden, both tables answer exactly the same (status and body,
  seat tokens aside) as long as the cards are still hidden afterwards — so no
  answer can depend on, let alone show, a hidden card; and the public state
  keeps showing only *that* Ben and Chloé entered.

When a request is accepted and changes the game (a right PIN with a good
action, a claim released...), both tables are set up again.

``COMPANION_HTTP_FUZZ_EXAMPLES`` sets the number of examples (one request to
each table per example; default 500, CI sets 5000).

Also here: the PIN guessing limit, beyond tests/web/test_api.py — every route
that takes a credential counts toward the same limit, a forged
X-Forwarded-For does not reset it, and the bound it puts on guessing.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from companion.session import TableSession
from companion.store import Store
from web_support import PIN, FakeBox, http, make_app, running_server

pytestmark = pytest.mark.slow        # minutes at CI's scale: run first (tests/conftest.py)
EXAMPLES = int(os.environ.get("COMPANION_HTTP_FUZZ_EXAMPLES", "500"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]
THIRD_MAN = {"type": "new_game", "game": "third-man", "players": PLAYERS}
SECRETS = {"A": {1: 3, 2: 7}, "B": {1: 8, 2: 2}}      # the hidden cards of each twin
HIDDEN_SEATS = (1, 2)
SETUP_ADDR = "127.0.0.9"                              # the setup's own address: never throttled by the fuzz
NOTICE = ("The game store was damaged: {games} games were saved; the damaged file was kept as {name}.",
          {"games": 2, "name": "companion.db.damaged-20240101-120000"})


class Twin:
    """One of the two tables: store, session, app, test client."""

    def __init__(self, name: str, folder: str, clock):
        self.name = name
        self.store = Store(folder)
        self.session = TableSession(self.store)
        self.box = FakeBox()
        # The fuzz is a crowd of clients, wrong PINs included: the table-wide
        # limit and its "someone is guessing" notice (a deliberate change on a
        # refusal) are out of its way here and tested in test_pin_guard.py.
        self.app = make_app(self.session, box=self.box, mock=True, url="http://192.168.1.20:8000/",
                            pin_table_burst=10**9, pin_alarm_after=10**9)
        self.companion = self.app.extensions["companion"]
        self.companion.guard.clock = clock           # both twins see the same time
        self.client = self.app.test_client()
        self.setup()

    def _send(self, method, path, body=None):
        reply = self.client.open(path, method=method, json=body, headers={"X-Table-Pin": PIN},
                                 environ_base={"REMOTE_ADDR": SETUP_ADDR})
        assert reply.status_code == 200, (path, body, reply.get_json())

    def setup(self) -> None:
        """The Third Man bid under way, every seat claimed, one notice."""
        for seat in list(self.session.table.claims):
            self._send("POST", f"/api/seats/{seat}/release")
        self._send("POST", "/api/actions", THIRD_MAN)
        for seat in range(4):     # before the bids: a seat whose card is locked cannot be claimed
            self._send("POST", f"/api/seats/{seat}/claim", {"name": f"phone {seat}"})
        self._send("POST", "/api/actions", {"type": "bid", "seat": 0, "card": 5})
        for seat, card in SECRETS[self.name].items():
            self._send("POST", "/api/actions", {"type": "bid", "seat": seat, "card": card})
        self.session.update_table(lambda table: (table.notices.clear(), table.notices.append(NOTICE)))
        assert self.hidden() == SECRETS[self.name]

    def hidden(self) -> dict:
        return dict(self.session.timeline.state.hidden)

    def fingerprint(self):
        """What a refused request must not change."""
        s = self.session
        with s.lock:
            return (s.game_id, len(s.timeline.log), len(s.store.lines(s.game_id)),
                    json.dumps(s.public(), sort_keys=True), dict(s.table.claims), list(s.table.notices),
                    self.hidden())

    def token(self, seat: int) -> str | None:
        return self.companion.seats._tokens.get(seat)

    def close(self) -> None:
        self.companion.close()
        self.store.close()


# -- the requests ---------------------------------------------------------------------

PRINTABLE_LATIN1 = st.characters(min_codepoint=32, max_codepoint=255, blacklist_characters="\x7f")
SEAT_PARAM = st.one_of(
    st.integers(-3, 6).map(str),
    st.integers(-10**30, 10**30).map(str),
    st.sampled_from(["", "x", "0x1", "1.0", "１", "%00", "%FF", "..", "0" * 40, " 1", "+1", "-0", "1e3", "٣", "1;2"]),
    st.text(max_size=8),
)
BUTTON = st.one_of(st.sampled_from(["ok", "up", "down", "back", "OK", "nope", "", "%2e%2e", "é"]), st.text(max_size=6))
PATH = st.one_of(
    st.sampled_from(["/api/state", "/api/events", "/api/actions", "/api/games", "/api/seats", "/api/notices",
                     "/oled.png", "/", "/dev", "/dev/frames", "/nope", "/api", "/api/", "//api/state",
                     "/api/actions/", "/static/x.js", "/api/state/..", "/api/notices/0/dismiss",
                     "/%2e%2e/etc/passwd", "/api/seats/1/view/"]),
    st.builds("/api/seats/{}/{}".format, SEAT_PARAM, st.sampled_from(["claim", "release", "view", "nope"])),
    st.builds("/dev/buttons/{}/{}".format, BUTTON, st.sampled_from(["press", "hold", "tap", ""])),
    st.builds("/api/notices/{}/dismiss".format, SEAT_PARAM),
    st.text(max_size=20).map(lambda t: "/" + t),
)
QUERY = st.one_of(
    st.just(""),
    st.sampled_from(["lang=fr", "lang=xx", "lang=", "lang=fr-FR", "scale=0", "scale=3", "scale=99", "scale=-1",
                     "scale=abc", "scale=%00", "v=1", "lang=fr&lang=en", "%ff=%fe"]),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3).map(urlencode),
)
METHOD = st.sampled_from(["GET", "POST", "POST", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "BREW"])
PIN_HEADER = st.one_of(st.sampled_from([None, "right", "right", "0000", PIN + " ", " ", PIN * 2, "٢٤٦٨"]),
                       st.text(PRINTABLE_LATIN1, max_size=12))
TOKEN_HEADER = st.one_of(st.sampled_from([None, None, ("seat", 0), ("seat", 1), ("seat", 2), ("seat", 3),
                                          "stale-token-abcdefghijklmnopqrstuvwxyz"]),
                         st.text(PRINTABLE_LATIN1, max_size=40))
CONTENT_TYPE = st.one_of(
    st.sampled_from([None, "application/json", "application/json", "application/json; charset=utf-8",
                     "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz",
                     "application/merge-patch+json", "application/json; charset=latin-1", "", "*/*",
                     "application/json; boundary=\""]),
    st.text(PRINTABLE_LATIN1, max_size=20))
LANGUAGE = st.one_of(st.sampled_from([None, "fr", "fr-FR,fr;q=0.9", "*", "xx", "en;q=nope", ""]),
                     st.text(PRINTABLE_LATIN1, max_size=12))
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)
ACTION = st.fixed_dictionaries(
    {"type": st.sampled_from(["bid", "bid", "undo", "new_game", "add", "secret", "double", "nope"])},
    optional={"seat": st.one_of(st.integers(-1, 4), JSON_VALUE), "card": st.one_of(st.integers(-1, 10), JSON_VALUE),
              "game": st.sampled_from(["third-man", "scoreboard", "nope"]),
              "players": st.lists(st.text(max_size=6), max_size=5), "name": JSON_VALUE, "zz": JSON_VALUE})
BODY = st.one_of(
    st.none(),
    ACTION.map(json.dumps),
    JSON_VALUE.map(json.dumps),
    st.tuples(ACTION.map(json.dumps), st.floats(0, 1)).map(lambda t: t[0][: int(len(t[0]) * t[1])]),  # truncated
    st.binary(max_size=64),
    st.sampled_from([b'{"type": "bid", "seat": 3, "card": NaN}', b'{"type": "bid", "seat": 3, "card": Infinity}',
                     b'{"type": "\xff\xfe"}', b"\xef\xbb\xbf{\"type\": \"undo\"}", b"[" * 5000 + b"]" * 5000,
                     b'{"type": "bid", "seat": 3, "card": 1e400}', b'{"seat": 3, "seat": 1, "type": "bid", "card": 4}',
                     b'{"name": "' + "\u202e".encode() * 10 + b'"}', b"{}", b"[]", b"null", b'"undo"',
                     b" " * 20000, b'{"name": "' + b"x" * 17000 + b'"}', b"x" * (1024 * 1024 + 1)]),
)
ADDR = st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3", "::1"])
EXTRA = st.dictionaries(st.sampled_from(["X-Forwarded-For", "Origin", "Cookie", "Range", "If-None-Match",
                                         "Transfer-Encoding", "Expect", "Accept"]),
                        st.text(PRINTABLE_LATIN1, max_size=20), max_size=2)
# Anything at all...
ANY_REQUEST = st.fixed_dictionaries({
    "method": METHOD, "path": PATH, "query": QUERY, "pin": PIN_HEADER, "token": TOKEN_HEADER,
    "content_type": CONTENT_TYPE, "language": LANGUAGE, "body": BODY, "addr": ADDR, "extra": EXTRA,
})
# ...and requests aimed at the routes, mostly well-formed around one broken part,
# so that the checks behind the routing (credentials, JSON, fields, rules) are reached.
GOOD_SEAT = st.one_of(st.integers(0, 4).map(str), SEAT_PARAM)
ROUTE = st.one_of(
    st.just(("POST", "/api/actions")), st.just(("POST", "/api/actions")), st.just(("POST", "/api/actions")),
    st.builds(lambda s: ("POST", f"/api/seats/{s}/claim"), GOOD_SEAT),
    st.builds(lambda s: ("POST", f"/api/seats/{s}/release"), GOOD_SEAT),
    st.builds(lambda s: ("GET", f"/api/seats/{s}/view"), GOOD_SEAT),
    st.builds(lambda s: ("POST", f"/api/notices/{s}/dismiss"), GOOD_SEAT),
    st.builds(lambda b, h: ("POST", f"/dev/buttons/{b}/{h}"), BUTTON, st.sampled_from(["press", "hold"])),
    st.sampled_from([("GET", "/api/state"), ("GET", "/api/events"), ("GET", "/api/seats"), ("GET", "/api/notices"),
                     ("GET", "/api/games"), ("GET", "/oled.png"), ("GET", "/dev"), ("GET", "/"), ("GET", "/dev/frames")]),
)
BID = st.fixed_dictionaries({"type": st.just("bid"), "seat": st.integers(0, 3), "card": st.integers(0, 9)})
AIMED_BODY = st.one_of(BID.map(json.dumps), BID.map(json.dumps), ACTION.map(json.dumps),
                       st.just(json.dumps({"type": "undo"})), st.just(json.dumps({"name": "Zoë's phone"})), BODY)
AIMED_REQUEST = st.builds(
    lambda route, query, pin, token, content_type, language, body, addr, extra: {
        "method": route[0], "path": route[1], "query": query, "pin": pin, "token": token,
        "content_type": content_type, "language": language, "body": body, "addr": addr, "extra": extra},
    ROUTE, st.one_of(st.just(""), QUERY), st.one_of(st.just("right"), PIN_HEADER), TOKEN_HEADER,
    st.one_of(st.just("application/json"), CONTENT_TYPE), LANGUAGE, AIMED_BODY, ADDR, EXTRA)
# ...and well-formed actions with the PIN, so that the rules answer (409) and
# accepted changes happen too.
GOOD_REQUEST = st.builds(
    lambda body, token, addr: {
        "method": "POST", "path": "/api/actions", "query": "", "pin": "right", "token": token,
        "content_type": "application/json", "language": None, "body": body, "addr": addr, "extra": {}},
    st.one_of(BID.map(json.dumps), ACTION.map(json.dumps)), st.sampled_from([None, ("seat", 1), "x"]), ADDR)
REQUEST = st.one_of(AIMED_REQUEST, AIMED_REQUEST, GOOD_REQUEST, ANY_REQUEST)


def headers_for(twin: Twin, request: dict) -> dict:
    headers = dict(request["extra"])
    headers.pop("Transfer-Encoding", None)   # the test client builds the body itself
    pin = request["pin"]
    if pin is not None:
        headers["X-Table-Pin"] = PIN if pin == "right" else pin
    token = request["token"]
    if isinstance(token, tuple):
        token = twin.token(token[1]) or "released-seat-token-000000000000"
    if token is not None:
        headers["X-Seat-Token"] = token
    if request["language"] is not None:
        headers["Accept-Language"] = request["language"]
    return headers


def is_owner(request: dict) -> bool:
    """A request that carries the token of a seat whose card is hidden: it may
    see that card (its own view reads with the token, a PIN alongside or not)."""
    token = request["token"]
    return isinstance(token, tuple) and token[1] in HIDDEN_SEATS


def send(twin: Twin, request: dict) -> tuple[int, str, bytes]:
    body = request["body"]
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    kwargs = {}
    if request["content_type"] is not None:
        kwargs["content_type"] = request["content_type"]
    path = quote(request["path"], safe="/%:@!$&'()*+,;=-._~")
    reply = twin.client.open(path, method=request["method"], headers=headers_for(twin, request), data=body,
                             query_string=request["query"], environ_base={"REMOTE_ADDR": request["addr"]},
                             buffered=False, **kwargs)
    try:
        if reply.mimetype == "text/event-stream" and request["method"] != "HEAD":
            data = b"".join(itertools.islice(iter(reply.response), 2))   # retry, then the snapshot
        else:
            data = reply.get_data()
    finally:
        reply.close()
    return reply.status_code, reply.mimetype, data


def comparable(mimetype: str, data: bytes):
    """The answer, with seat tokens (new at every claim, random) left out."""
    if mimetype == "application/json" and data:
        value = json.loads(data)
        if isinstance(value, dict):
            value.pop("token", None)
        return value
    return data


def check_answer(request: dict, status: int, mimetype: str, data: bytes) -> None:
    where = f"{request['method']} {request['path']!r}"
    assert status < 500, f"{where} answered {status}: {data[:300]!r}"
    assert b"Traceback" not in data and b'File "' not in data, f"{where} showed a traceback"
    path = request["path"]
    if status >= 400 and request["method"] != "HEAD" and (path.startswith("/api/") or path.startswith("/dev/")):
        assert mimetype == "application/json", f"{where}: {status} {mimetype} {data[:200]!r}"
        error = json.loads(data)
        assert list(error) == ["error"] and isinstance(error["error"], str) and error["error"]
        assert "\n" not in error["error"]


@pytest.fixture(scope="module")
def twins():
    now = [1000.0]
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        pair = (Twin("A", a, lambda: now[0]), Twin("B", b, lambda: now[0]))
        pair[0].now = now
        yield pair
        for twin in pair:
            twin.close()


REQUESTS = {"sent": 0, "accepted": 0, "compared": 0}


@FUZZ
@given(request=REQUEST)
def test_random_requests_never_break_the_api_change_nothing_when_refused_and_show_no_secret(twins, request):
    a, b = twins
    a.now[0] += 1.0                       # the guard's clock: blocks (5 s) end after a few examples
    before = {t.name: t.fingerprint() for t in twins}
    answers = {}
    for twin in twins:
        status, mimetype, data = send(twin, request)
        REQUESTS["sent"] += 1
        check_answer(request, status, mimetype, data)
        after = twin.fingerprint()
        if status >= 400 or request["method"] in ("GET", "HEAD", "OPTIONS"):
            assert after == before[twin.name], f"{request['method']} {request['path']!r} ({status}) changed the table"
        answers[twin.name] = (status, mimetype, data, after)

    (status_a, type_a, data_a, after_a), (status_b, type_b, data_b, after_b) = answers["A"], answers["B"]
    assert status_a == status_b, f"the twins disagree: {status_a} / {status_b} for {request}"
    still_hidden = after_a[-1] == SECRETS["A"] and after_b[-1] == SECRETS["B"]
    if still_hidden:
        public = json.loads(after_a[3])
        assert public["pending"] == {"lead_card": 5, "entered": [0, 1, 2]}
        assert after_a[3] == after_b[3], "the public state depends on the hidden cards"
        if not is_owner(request):
            REQUESTS["compared"] += 1
            assert (type_a, comparable(type_a, data_a)) == (type_b, comparable(type_b, data_b)), \
                f"an answer depends on a hidden card: {request}"
    if after_a != before["A"] or after_b != before["B"]:
        REQUESTS["accepted"] += 1
        for twin in twins:
            twin.setup()


def test_the_fuzz_really_sent_the_requests():
    """Run after the fuzz (file order): the volume promised, both ways."""
    if REQUESTS["sent"] == 0:
        pytest.skip("the fuzz test did not run in this session")
    assert REQUESTS["sent"] >= 2 * EXAMPLES
    assert REQUESTS["compared"] >= EXAMPLES // 2


# -- PIN guessing ------------------------------------------------------------------------

CREDENTIAL_ROUTES = [
    ("POST", "/api/actions", {"X-Table-Pin": "0000"}),
    ("POST", "/api/seats/1/claim", {"X-Table-Pin": "0001"}),
    ("POST", "/api/seats/1/release", {"X-Table-Pin": "0002"}),
    ("POST", "/api/seats/1/release", {"X-Seat-Token": "guess"}),
    ("GET", "/api/seats/1/view", {"X-Seat-Token": "guess"}),
    ("POST", "/api/notices/0/dismiss", {"X-Table-Pin": "0003"}),
]


@pytest.mark.parametrize("last", range(len(CREDENTIAL_ROUTES)), ids=[f"{m} {p}" for m, p, _ in CREDENTIAL_ROUTES])
def test_wrong_credentials_on_every_route_count_toward_one_limit(session, last):
    session.submit(THIRD_MAN)
    session.table.notices.append(NOTICE)
    app = make_app(session, pin_block_s=60)
    client = app.test_client()
    routes = [r for i, r in enumerate(CREDENTIAL_ROUTES) if i != last][:4] + [CREDENTIAL_ROUTES[last]]
    statuses = [client.open(path, method=method, headers=headers).status_code for method, path, headers in routes]
    assert statuses[:4] == [403] * 4 and statuses[4] == 403, statuses
    for method, path, headers in CREDENTIAL_ROUTES:       # now blocked everywhere, even with the right PIN
        reply = client.open(path, method=method, headers={"X-Table-Pin": PIN} if "X-Table-Pin" in headers else headers)
        assert reply.status_code == 429, (path, reply.status_code)
    app.extensions["companion"].close()


def test_a_forged_forwarded_for_does_not_escape_the_limit(session):
    """Under the real server the address is the socket's; proxy headers are not trusted."""
    app = make_app(session, pin_block_s=60)
    with running_server(app) as server:
        for i in range(5):
            status = http(server.port, "POST", "/api/actions", THIRD_MAN,
                          {"X-Table-Pin": f"{i:04d}", "X-Forwarded-For": f"10.1.2.{i}", "X-Real-IP": f"10.9.9.{i}"})[0]
            assert status == 403
        status = http(server.port, "POST", "/api/actions", THIRD_MAN,
                      {"X-Table-Pin": PIN, "X-Forwarded-For": "10.200.0.1"})[0]
        assert status == 429
    app.extensions["companion"].close()


def test_guessing_the_pin_from_one_phone_takes_hours():
    """The guard's own clock, run forward: trying all 10,000 PINs in a row
    from one address (waiting out each block) takes over two and a half hours."""
    from web.auth import PinGuard
    from web.errors import ApiError

    now = [0.0]
    guard = PinGuard("9999", clock=lambda: now[0])
    tries = 0
    for guess in range(10_000):
        while True:
            try:
                guard.check(f"{guess:04d}", "10.0.0.66")
                break
            except ApiError as exc:
                if exc.status == 429:
                    now[0] += int(exc.headers["Retry-After"])
                    continue
                assert exc.status == 403
                tries += 1
                now[0] += 0.01          # a fast attacker
                break
    assert tries == 9_999
    assert now[0] > 2.5 * 3600, f"all PINs tried in {now[0] / 3600:.1f} h"
