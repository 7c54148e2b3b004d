"""The turn clock in the core: modes, handover, pause, undo, a bank running
out, the log lines it writes and a restart — all on a fake clock."""

from __future__ import annotations

import json
import subprocess

import pytest

from companion import clock as tc
from companion.errors import ActionError, InvalidActionError
from companion.session import TableSession
from companion.store import Store
from companion.timeline import replay


class FakeTime:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t

    def sleep(self, seconds):
        self.t += seconds


@pytest.fixture
def fake():
    return FakeTime()


@pytest.fixture
def table(session, fake):
    session.clock.now = fake
    return session


def banks(session):
    return [session.clock.remaining_ms(s) for s in range(len(session.players))]


def scoreboard(session, players=("Ann", "Ben", "Cat")):
    session.submit({"type": "new_game", "game": "scoreboard", "players": list(players)})


# -- the model -------------------------------------------------------------------

def test_format():
    assert tc.format_ms(0) == "0:00"
    assert tc.format_ms(1) == "0:01"
    assert tc.format_ms(59_001) == "1:00"
    assert tc.format_ms(600_000) == "10:00"
    assert tc.format_ms(3_600_000 + 61_000) == "1:01:01"


@pytest.mark.parametrize("mode, extra, used, left", [
    ("sudden", 0, 12.0, 48_000),
    ("fischer", 5000, 12.0, 53_000),      # the increment comes with the handover
    ("delay", 5000, 12.0, 53_000),        # the first 5 s were free
    ("delay", 5000, 3.0, 60_000),         # all free
])
def test_modes(fake, mode, extra, used, left):
    clock = tc.TurnClock(fake)
    clock.follow(tc.new_record(mode, 60_000, extra, 2, 0), True)
    fake.sleep(used)
    after = clock.handover(1)
    assert after["banks"] == [left, 60_000] and after["turn"] == 1


def test_redraw_deadline_is_the_next_shown_second(fake):
    clock = tc.TurnClock(fake)
    clock.follow(tc.new_record("sudden", 60_000, 0, 2, 0), True)
    fake.sleep(0.25)
    assert tc.format_ms(clock.remaining_ms(0)) == "1:00"
    wait = clock.until_next_second()
    fake.sleep(wait - 0.002)
    assert tc.format_ms(clock.remaining_ms(0)) == "1:00"
    fake.sleep(0.002)
    assert tc.format_ms(clock.remaining_ms(0)) == "0:59"
    clock.pause()
    assert clock.until_next_second() is None      # paused: no timer at all


def test_records_are_checked_strictly():
    lines = ['{"type": "new_game", "game": "scoreboard", "players": ["A", "B"]}']
    bad = [
        {"type": "clock", "mode": "blitz", "extra": 0, "banks": [1, 1], "turn": 0},
        {"type": "clock", "mode": "sudden", "extra": 5, "banks": [1, 1], "turn": 0},
        {"type": "clock", "mode": "fischer", "extra": 0, "banks": [1], "turn": 0},
        {"type": "clock", "mode": "fischer", "extra": 0, "banks": [1, -1], "turn": 0},
        {"type": "clock", "mode": "fischer", "extra": 0, "banks": [1, 1], "turn": 2},
        {"type": "clock", "mode": "fischer", "extra": 0, "banks": [1, 1]},
        {"type": "clock", "mode": "fischer", "extra": 0, "banks": [1, 1], "turn": 0, "x": 1},
        {"type": "clock", "mode": "fischer", "extra": 0, "banks": [1.0, 1], "turn": 0},
    ]
    for action in bad:
        with pytest.raises(Exception) as info:
            replay(lines + [json.dumps(action)])
        assert info.value.line == 2, action
    ok = replay(lines + [json.dumps({"type": "clock", "mode": "sudden", "extra": 0, "banks": [5, 0], "turn": None})])
    assert ok.public()["clock"] == {"mode": "sudden", "extra": 0, "banks": [5, 0], "turn": None}


# -- the free scoreboard ------------------------------------------------------------

def test_handover_in_seat_order_pause_and_undo(table, fake):
    scoreboard(table)
    table.clock_set("fischer", 60_000, 2000)
    assert table.public()["clock"]["turn"] == 0 and table.clock.running
    fake.sleep(10)
    table.clock_end_turn()
    assert table.public()["clock"] == {"mode": "fischer", "extra": 2000, "banks": [52_000, 60_000, 60_000], "turn": 1}
    fake.sleep(5)
    assert table.clock_pause()
    fake.sleep(100)                     # paused: nothing runs
    assert banks(table) == [52_000, 55_000, 60_000]
    assert table.clock_resume()
    fake.sleep(5)
    table.clock_end_turn(1)             # the seat's own phone ends its turn
    assert table.public()["clock"]["banks"] == [52_000, 52_000, 60_000]
    with pytest.raises(ActionError):
        table.clock_end_turn(0)         # not seat 1's turn
    fake.sleep(7)
    table.submit({"type": "undo"})      # Ben's handover is given back, with his time
    assert table.public()["clock"]["turn"] == 1
    assert banks(table) == [52_000, 50_000, 60_000]   # as Ben left it, his increment taken back
    assert table.clock.running
    table.submit({"type": "add", "seat": 0, "points": 3})   # scoring leaves the clock alone
    fake.sleep(1)
    assert banks(table) == [52_000, 49_000, 60_000]


def test_a_bank_runs_out_and_the_others_go_on(table, fake):
    scoreboard(table)
    table.clock_set("sudden", 30_000, 0)
    fake.sleep(31)
    assert table.clock.until_next_second() == 0.0
    assert table.clock_tick() == 0
    public = table.public()
    assert public["clock"] == {"mode": "sudden", "extra": 0, "banks": [0, 30_000, 30_000], "turn": None}
    assert not table.clock.running and not table.clock_resume()
    table.clock_end_turn()               # the next seat with time starts
    assert table.public()["clock"]["turn"] == 1
    fake.sleep(3)
    table.clock_end_turn()
    table.clock_end_turn()               # Ann is skipped: her bank is empty
    assert table.public()["clock"]["turn"] == 1
    lines = table.export_lines()
    assert [json.loads(x)["type"] for x in lines[1:]] == ["clock"] * 5


def test_restart_keeps_the_last_handover_paused(tmp_path, fake):
    store = Store(tmp_path / "d")
    session = TableSession(store)
    session.clock.now = fake
    scoreboard(session)
    session.clock_set("delay", 90_000, 3000)
    fake.sleep(20)
    session.clock_end_turn()
    fake.sleep(40)                       # Ben's 40 s are lost with the power
    store.close()
    store = Store(tmp_path / "d")
    again = TableSession(store)
    again.clock.now = fake
    assert again.public()["clock"] == {"mode": "delay", "extra": 3000, "banks": [73_000, 90_000, 90_000], "turn": 1}
    assert not again.clock.running
    fake.sleep(50)
    assert again.clock.remaining_ms(1) == 90_000
    assert again.clock_resume()
    store.close()


def test_clock_lines_replay_and_old_logs_print_the_same(table, fake, tmp_path, companion_cmd):
    scoreboard(table)
    table.clock_set("sudden", 10_000, 0)
    fake.sleep(4)
    table.clock_end_turn()
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(table.export_lines()) + "\n")
    out = subprocess.run(companion_cmd + ["replay", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["clock"] == {"mode": "sudden", "extra": 0, "banks": [6000, 10_000, 10_000],
                                               "turn": 1}
    plain = replay(table.export_lines()[:1])
    assert "clock" not in plain.public()


# -- a game with its own turns: Fight -------------------------------------------------

def fight_turn(session):
    """The seat to play plays its largest coin and takes no change."""
    p = session.public()
    coins = p["coins"][p["turn"]]
    play = max(int(v) for v, n in coins.items() if n)
    return session.submit({"type": "turn", "seat": p["turn"], "play": play, "take": []})


def test_fight_moves_hand_the_clock_on(table, fake):
    table.submit({"type": "new_game", "game": "fight", "players": ["Ann", "Ben"]})
    table.clock_set("fischer", 60_000, 1000)
    assert table.public()["clock"]["turn"] == 0
    with pytest.raises(ActionError):
        table.clock_end_turn()           # the game's own moves pass the turn
    fake.sleep(6)
    fight_turn(table)
    public = table.public()
    assert public["turn"] == 1 and public["clock"] == {"mode": "fischer", "extra": 1000,
                                                       "banks": [55_000, 60_000], "turn": 1}
    line = json.loads(table.export_lines()[-1])
    assert line["type"] == "turn" and line["clock"]["banks"] == [55_000, 60_000]
    fake.sleep(3)
    table.submit({"type": "undo"})       # the move and its handover, in one
    assert table.public()["turn"] == 0 and table.public()["clock"]["turn"] == 0
    assert banks(table) == [54_000, 60_000]       # Ann's turn back as she left it; Ben's 3 s given back


def test_a_line_with_a_bad_clock_is_refused_whole(table):
    table.submit({"type": "new_game", "game": "fight", "players": ["Ann", "Ben"]})
    with pytest.raises(InvalidActionError):
        table.submit({"type": "turn", "seat": 0, "play": 20, "take": [],
                      "clock": {"mode": "sudden", "extra": 0, "banks": [1], "turn": 1}})
    assert table.public()["turn"] == 0 and len(table.export_lines()) == 1


def test_a_clock_key_is_only_for_games_with_their_own_turns():
    lines = ['{"type": "new_game", "game": "scoreboard", "players": ["A", "B"]}',
             json.dumps({"type": "add", "seat": 0, "points": 1,
                         "clock": {"mode": "sudden", "extra": 0, "banks": [1, 1], "turn": 1}})]
    with pytest.raises(Exception) as info:
        replay(lines)
    assert info.value.line == 2 and "clock" in str(info.value)


@pytest.mark.parametrize("sample", ["yenta/full_hand.jsonl", "yenta/mid_hand.jsonl", "sloppy-seconds/trick_entry_trump.jsonl",
                                    "fight/three_players.jsonl"])
def test_the_clock_follows_each_game_of_its_own_turns(table, fake, sample):
    """The samples played with a clock set after new_game: after every move
    the clock runs for the seat the game names, and the log still replays
    to the sample's state (plus its clock)."""
    from conftest import SCENARIOS

    path = SCENARIOS / sample
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    table.submit(json.loads(lines[0]))
    table.clock_set("fischer", 600_000, 1000)
    for line in lines[1:]:
        fake.t += 2
        table.submit(json.loads(line))
        public = table.public()
        assert public["clock"]["turn"] == tc.followed_turn(public)
        assert table.clock.running == (public["clock"]["turn"] is not None)   # runs again after a hand
    plain = replay(lines).public()
    clocked = replay(table.export_lines()).public()
    assert clocked.pop("clock")["turn"] == tc.followed_turn(plain)
    assert clocked == plain
