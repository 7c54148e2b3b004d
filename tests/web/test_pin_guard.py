"""Guessing the PIN from many addresses (issue 13, finding 8), and a new PIN
drawn from the box's menu.

As found: 60 tries a minute per address, but 5,389 a minute from 100
loopback addresses, and a random PIN fell in 41 s.  Now wrong PINs are also
limited table-wide; the box shows that someone is guessing and draws a new
PIN from its menu.
"""

from __future__ import annotations

import pytest

from box_support import make_box, mock_factory, shows  # noqa: F401 (fixtures)
from web_support import PIN, make_app, pin_headers

from web.auth import PinGuard
from web.errors import ApiError

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def attempt(guard, pin, client) -> int:
    try:
        guard.check(pin, client)
        return 200
    except ApiError as exc:
        return exc.status


def test_many_addresses_get_one_comparison_per_refill_table_wide():
    """An evening (8 h) of guessing from 200 addresses, all at full speed:
    the PIN is compared at most burst + 8 h / refill times."""
    clock = Clock()
    guard = PinGuard("7391", tries=5, block_s=5.0, table_burst=20, table_refill_s=60.0, clock=clock)
    compared = 0
    guesses = iter(f"{n:04d}" for n in range(10_000) if n != 7391)
    end = clock.now + 8 * 3600
    while clock.now < end:
        for address in range(200):
            status = attempt(guard, next(guesses, "0000"), f"10.0.{address // 250}.{address % 250}")
            compared += status == 403
            assert status != 200
        clock.now += 10.0
    assert compared <= 20 + 8 * 60 + 1
    assert compared >= 8 * 60, "the bucket refills (the table is not locked forever)"


def guess_for(clock, guard, *, addresses: int, hours: float, per_second: int,
              phone_every_s: float | None = None) -> tuple[int, set]:
    """Distinct wrong PINs sent at ``per_second`` from ``addresses`` in turn
    for ``hours``; with ``phone_every_s``, a phone of the table behind the
    guesser's first address (one NAT) shows the right PIN that often.
    Returns (wrong PINs compared, the addresses that showed the right PIN)."""
    compared, trusted, sent = 0, set(), 0
    guesses = (f"{n % 10_000:04d}" for n in range(10**9) if n % 10_000 != 7391)
    end = clock.now + hours * 3600
    next_phone = clock.now
    while clock.now < end:
        if phone_every_s is not None and clock.now >= next_phone:
            if attempt(guard, "7391", "10.1.0.0") == 200:
                trusted.add("10.1.0.0")
            next_phone += phone_every_s
        if phone_every_s is not None:           # the guesser uses the phone's address too
            status = attempt(guard, next(guesses), "10.1.0.0")
            assert status != 200
            compared += status == 403
        for _ in range(per_second):
            n = sent % addresses
            status = attempt(guard, next(guesses), f"10.{1 + n // 65536}.{n // 256 % 256}.{n % 256}")
            assert status != 200
            compared += status == 403
            sent += 1
        clock.now += 1.0
    return compared, trusted


@pytest.mark.parametrize("addresses", [1, 25, 60_000])
@pytest.mark.parametrize("phone", [False, True], ids=["alone", "behind-a-table-phone"])
def test_the_guessing_bound_holds_from_any_number_of_addresses(addresses, phone):
    """docs/security.md: in T seconds after a PIN is drawn at most
    burst + T / refill + P wrong PINs are compared, P the addresses that
    showed the right PIN.  Found: an address that once showed the right PIN
    was compared 60 times a minute.  Here the guesser shares its first
    address with a table phone that shows the PIN every 30 s (a phone
    taken over, or one NAT)."""
    clock = Clock()
    guard = PinGuard("7391", tries=5, block_s=5.0, table_burst=20, table_refill_s=60.0, clock=clock)
    hours = 2.0
    per_second = 2 if addresses == 1 else 25 if addresses == 25 else 60
    compared, trusted = guess_for(clock, guard, addresses=addresses, hours=hours, per_second=per_second,
                                  phone_every_s=30.0 if phone else None)
    assert compared <= guard.bound(hours * 3600, len(trusted))
    assert compared >= hours * 60, "the bucket refills (the table is not locked forever)"
    assert guard.wrong_pins == compared, "every compared wrong PIN was counted table-wide"


def test_a_right_pin_earns_no_allowance_for_wrong_ones():
    """The audit's loop: one address shows the right PIN, then guesses at
    full speed.  Its first wrong PIN ends its trust: it drains the bucket
    like anyone and is then held to one comparison per refill."""
    clock = Clock()
    guard = PinGuard("7391", tries=1000, table_burst=20, table_refill_s=60.0, clock=clock)
    assert attempt(guard, "7391", "127.0.0.60") == 200
    statuses = [attempt(guard, f"{n:04d}", "127.0.0.60") for n in range(60)]
    assert statuses[:20] == [403] * 20 and set(statuses[20:]) == {429}
    assert attempt(guard, "0100", "10.0.0.1") == 429, "the bucket is empty for everyone"
    clock.now += 60
    assert attempt(guard, "0101", "127.0.0.60") == 403
    assert attempt(guard, "7391", "127.0.0.60") == 429, "no trust left, no token left"
    clock.now += 60
    assert attempt(guard, "7391", "127.0.0.60") == 200, "the right PIN gets in after a refill"
    assert attempt(guard, "0102", "127.0.0.60") == 403
    assert attempt(guard, "0103", "127.0.0.60") == 429


def test_a_trusted_addresss_wrong_pin_on_an_empty_bucket_is_a_debt():
    """A table phone is compared while the bucket is empty (so the table
    keeps playing); a wrong PIN it sends then is paid by the next refill."""
    clock = Clock()
    guard = PinGuard("7391", tries=1000, table_burst=3, table_refill_s=60.0, clock=clock)
    assert attempt(guard, "7391", "phone") == 200
    for n in range(3):
        assert attempt(guard, f"{n:04d}", f"10.0.0.{n}") == 403
    assert attempt(guard, "0009", "phone") == 403, "compared: it had shown the PIN"
    assert attempt(guard, "7391", "phone") == 429, "and trusted no more"
    clock.now += 60
    assert attempt(guard, "7391", "phone") == 429, "the first refill pays the debt"
    clock.now += 60
    assert attempt(guard, "7391", "phone") == 200


def test_the_table_phones_keep_playing_while_a_stranger_guesses():
    clock = Clock()
    guard = PinGuard("7391", table_burst=5, table_refill_s=60.0, clock=clock)
    phones = [f"192.168.1.{n}" for n in range(4)]
    for phone in phones:
        assert attempt(guard, "7391", phone) == 200
    for minute in range(30):
        for n in range(100):
            attempt(guard, f"{n:04d}", f"10.0.{minute}.{n}")
        for phone in phones:
            assert attempt(guard, "7391", phone) == 200
        clock.now += 60


def test_a_refusal_while_throttled_is_the_same_for_the_right_pin():
    """A new address gets the same 429 for the right PIN and a wrong one:
    refused before the comparison, nothing is learnt from it."""
    clock = Clock()
    guard = PinGuard("7391", table_burst=3, table_refill_s=60.0, clock=clock)
    for n in range(3):
        assert attempt(guard, f"{n:04d}", f"10.0.0.{n}") == 403
    answers = []
    for pin in ("7391", "1111"):
        with pytest.raises(ApiError) as caught:
            guard.check(pin, "10.0.1.1")
        answers.append((caught.value.status, caught.value.text("en"), caught.value.headers))
    assert answers[0] == answers[1] and answers[0][0] == 429
    clock.now += 60
    assert attempt(guard, "7391", "10.0.1.1") == 200, "after a refill the right PIN gets in"


def test_the_tables_phones_are_not_locked_out_while_a_guesser_is_throttled():
    clock = Clock()
    guard = PinGuard("7391", table_burst=5, table_refill_s=60.0, clock=clock)
    assert attempt(guard, "7391", "phone") == 200          # a phone of the table
    for n in range(50):
        attempt(guard, f"{n:04d}", f"10.0.0.{n}")
    assert attempt(guard, "0001", "stranger") == 429
    assert attempt(guard, "7391", "phone") == 200, "a phone that showed the PIN is still accepted"
    guard.set_pin("2222")                                  # a new PIN: nobody is trusted any more
    assert attempt(guard, "7391", "phone") == 429
    clock.now += 60
    assert attempt(guard, "7391", "phone") == 403, "the old PIN stopped working"
    clock.now += 60
    assert attempt(guard, "2222", "phone") == 200


def test_the_alarm_is_for_guessing_not_for_a_typo_now_and_then():
    clock, alarms = Clock(), []
    guard = PinGuard("7391", table_burst=20, table_refill_s=60.0, alarm_after=10, clock=clock, alarm=alarms.append)
    for n in range(30):                                    # one typo every two minutes all evening
        assert attempt(guard, "0000", f"phone {n % 4}") == 403
        clock.now += 120
    assert alarms == []
    for n in range(9):
        attempt(guard, f"{n:04d}", f"10.0.0.{n}")
    assert alarms == []
    attempt(guard, "0009", "10.0.0.9")                     # ten in a row
    assert alarms == [40]
    for n in range(10):
        attempt(guard, f"{n:04d}", f"10.0.2.{n}")
    assert alarms == [40], "at most one alarm every 10 minutes"
    clock.now += 600
    attempt(guard, "1234", "10.0.1.1")
    assert alarms == [40, 51]


def test_wrong_tokens_do_not_drain_the_tables_pin_bucket():
    guard = PinGuard("7391", table_burst=2, table_refill_s=60.0, clock=Clock())
    for n in range(30):
        guard.miss(f"10.0.0.{n}")                          # stale tokens from the table's phones
    assert attempt(guard, "7391", "new phone") == 200


# -- through the app and the box ------------------------------------------------------

def test_someone_guessing_is_shown_on_the_box_and_the_phones(session, make_box):
    box = make_box()
    app = make_app(session, box=box, mock=True)
    client = app.test_client()
    try:
        for n in range(10):
            r = client.post("/api/actions", json=THIRD_MAN, headers=pin_headers(f"{n:04d}"),
                            environ_base={"REMOTE_ADDR": f"127.0.0.{n + 2}"})
            assert r.status_code == 403
        notices = client.get("/api/notices").json["notices"]
        assert any("Someone is guessing the table PIN (10 wrong PINs)" in n for n in notices)
        box.flush()
        shows(box, "Notice")
        assert "guessing" in " ".join(box.frame.texts)
    finally:
        app.extensions["companion"].close()


def test_a_new_pin_from_the_box_menu(session, make_box):
    box = make_box()
    app = make_app(session, box=box, mock=True)
    client = app.test_client()
    try:
        box.show_join("http://192.168.1.20:8000/", PIN)
        assert client.post("/api/actions", json=THIRD_MAN, headers=pin_headers()).status_code == 200
        token = client.post("/api/seats/1/claim", headers=pin_headers()).json["token"]
        box.flush()
        box.press("ok")                                    # keep the claim
        box.press("back")                                  # the menu
        while box.app.layers[-1].rows()[box.app.layers[-1].cursor][0] != "New PIN":
            box.press("down")
        box.press("ok")
        shows(box, "New PIN", "OK: new PIN")
        box.press("ok")
        new = box.app.join[1]
        assert new != PIN and len(new) == 4 and new.isdigit()
        shows(box, "PIN", new)                             # the box shows it with the QR code
        assert new not in box.mirror.texts, "never on the mirror"
        assert client.post("/api/actions", json={"type": "undo"}, headers=pin_headers()).status_code == 403
        assert client.get("/api/seats/1/view", headers={"X-Seat-Token": token}).status_code == 200
        assert client.post("/api/actions", json={"type": "bid", "seat": 0, "card": 1},
                           headers=pin_headers(new)).status_code == 200
        assert PIN not in client.get("/dev").get_data(as_text=True)
    finally:
        app.extensions["companion"].close()


# -- every route that changes something asks for a credential --------------------------

# The routes that change something with neither the PIN nor a seat token, on
# purpose.  Each must say why here: a new route is refused by the test below
# until it asks for a credential (web/guards.py) or is listed.
OPEN = {
    # The mock box's own buttons: whoever sits at the box presses them, as
    # on a real box, where no PIN guards the buttons either.  The route
    # exists only in mock mode, answers only on the computer running it,
    # and refuses other sites' pages (web/dev.py).
    "/dev/buttons/<name>/<how>",
    "/dev/pins/<bcm>/<how>",            # the same buttons, by their BCM pin
}

# What each route would take with the PIN: the refusal must be the missing
# credential's, not the body's (a route that read its body before asking
# would change something here).  Routes not listed are sent an empty body.
BODIES = {
    "/api/actions": {"type": "new_game", "game": "scoreboard", "players": ["Eve", "Fay"]},
    "/api/seats/<int:seat>/claim": {"name": "Ann's phone"},
    "/api/players": {"name": "Zoé"},
    "/api/players/<int:player_id>/rename": {"name": "Zoé"},
    "/api/players/<int:player_id>/merge": {"into": 2},
    "/api/clock": {"mode": "fischer", "bank_s": 600, "extra_s": 5},
    "/api/setup": {"name": "Kitchen table", "language": "fr"},
}


def changing_rules(app) -> list:
    """Every rule of ``app`` that takes a method other than GET, HEAD, OPTIONS."""
    return [rule for rule in app.url_map.iter_rules() if rule.methods - {"GET", "HEAD", "OPTIONS"}]


def what_the_table_holds(client, folder) -> tuple:
    """Everything a route could change, as a phone and the data folder see it
    (SQLite's side files come and go with reads, so they are left out)."""
    public = tuple(client.get(path).get_data() for path in
                   ("/api/state", "/api/seats", "/api/notices", "/api/players", "/api/clock", "/api/history"))
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                   if not p.name.endswith(("-wal", "-shm", "-journal")))
    return public, files


@pytest.fixture
def busy_table(session, tmp_path):
    """An app whose every changing route has something to change: a game
    at four seats with a paused turn clock, a roster, a notice.  The update and
    set-up routes write below ``tmp_path`` (never the real box's folders),
    and the alarm on wrong PINs is off (its notice would be a change)."""
    app = make_app(session, data_dir=str(tmp_path / "box"), update_state=str(tmp_path / "update"),
                   pin_alarm_after=1000)
    client = app.test_client()
    assert client.post("/api/actions", json=THIRD_MAN, headers=pin_headers()).status_code == 200
    assert client.post("/api/clock", json={"mode": "sudden", "bank_s": 60},
                       headers=pin_headers()).status_code == 200
    assert client.post("/api/clock/pause", headers=pin_headers()).status_code == 200      # a clock that stands still
    from web.app import GUESSING

    session.update_table(lambda table: table.notices.append((GUESSING, {"n": 10})))
    yield app, client
    app.extensions["companion"].close()


def send(client, rule, headers, address="127.0.0.1"):
    """``rule``'s method other than GET, with its body, at a URL it matches (1 for
    each number, "ok"/"press" for a name)."""
    values = {name: 1 if type(rule._converters[name]).__name__ == "StoredInt" else "ok"
              for name in rule.arguments}
    url = rule.rule
    for name, value in values.items():
        url = url.replace(f"<int:{name}>", str(value)).replace(f"<{name}>", str(value))
    method = sorted(rule.methods - {"GET", "HEAD", "OPTIONS"})[0]
    body = BODIES.get(rule.rule)
    return client.open(url, method=method, json=body, data=None if body is not None else b"",
                       headers=headers, environ_base={"REMOTE_ADDR": address})


def test_every_route_that_changes_something_asks_for_the_pin_first(busy_table, tmp_path):
    """Sent with no credential, every changing route (but the few listed in
    OPEN) answers 401 naming the PIN's header, and nothing at the table
    changed; sent a wrong PIN, every one answers 403: the PIN is compared,
    not merely looked for (web/guards.py)."""
    app, client = busy_table
    rules = [rule for rule in changing_rules(app) if rule.rule not in OPEN]
    assert len(rules) >= 15, "the app's changing routes were found"
    assert OPEN <= {rule.rule for rule in changing_rules(app)}, "every open route still exists"
    before = what_the_table_holds(client, tmp_path)
    unguarded, owners = [], set()
    for rule in rules:
        r = send(client, rule, headers={})
        error = r.get_json(silent=True).get("error", "")
        if r.status_code == 401 and "X-Owner-Password" in error:
            owners.add(rule.rule)           # the system's, not the table's (below)
        elif r.status_code != 401 or "X-Table-Pin" not in error:
            unguarded.append(f"{rule.rule}: {r.status_code} {r.get_data(as_text=True)[:120]}")
    assert not unguarded, "answered without a credential:\n" + "\n".join(unguarded)
    assert {"/api/owner/ssh-key", "/api/owner/ssh-key/remove", "/api/owner/reset"} <= owners
    assert what_the_table_holds(client, tmp_path) == before, "a request without a credential changed the table"
    for n, rule in enumerate(rules):            # one address each: no address is blocked for its tries
        r = send(client, rule, headers=pin_headers("0000"), address=f"10.9.0.{n + 1}")
        if r.status_code != (401 if rule.rule in owners else 403):
            unguarded.append(f"{rule.rule}: {r.status_code} {r.get_data(as_text=True)[:120]}")
    assert not unguarded, "answered with a wrong PIN:\n" + "\n".join(unguarded)
    # The owner's routes: the right PIN is no owner password either.
    for n, rule in enumerate(sorted(owners, key=str)):
        r = send(client, next(x for x in rules if x.rule == rule), headers=pin_headers(), address=f"10.8.0.{n + 1}")
        if r.status_code != 401:
            unguarded.append(f"{rule}: {r.status_code} {r.get_data(as_text=True)[:120]}")
    assert not unguarded, "an owner's route answered the table PIN:\n" + "\n".join(unguarded)
    assert what_the_table_holds(client, tmp_path) == before, "a request with a wrong PIN changed the table"


def test_the_pin_is_compared_in_one_place():
    """Every route asks web/guards.py for the PIN: one comparison, so one
    set of refusals and one throttle for all of them."""
    from pathlib import Path

    import web

    calls = [(path.name, line.strip()) for path in sorted(Path(web.__file__).parent.glob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if "guard.check(" in line]
    assert calls == [("guards.py", "companion().guard.check(pin, client())"),
                     ("guards.py", "c.owner_guard.check(supplied, client())")], calls
