"""Taken back means gone (issue 13, finding 3).

A secret entry that ``undo`` takes back before it was ever revealed leaves
the public log together with that undo; every way out (exports, history,
CSV, backups, the store's own files) shows the public log only.  An entry
revealed once stays in, even if the reveal was undone later.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.exports import public_log, public_prefix
from companion.history import public_steps
from companion.timeline import Timeline, parse_line, replay
from secret_games import SECRET_GAMES, play

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Cat", "Dan"]}
UNDO = {"type": "undo"}


def lines(*actions):
    return [json.dumps(a) for a in actions]


def bid(seat, card):
    return {"type": "bid", "seat": seat, "card": card}


def scoreboard(**options):
    action = {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]}
    if options:
        action["options"] = options
    return action


# -- the representation ----------------------------------------------------------------

def test_an_entry_taken_back_unrevealed_is_omitted_with_its_undo():
    raw = lines(THIRD_MAN, bid(0, 5), bid(1, 7), UNDO, bid(1, 3), bid(2, 8), bid(3, 1))
    assert public_log(raw) == lines(THIRD_MAN, bid(0, 5), bid(1, 3), bid(2, 8), bid(3, 1))
    assert replay(public_log(raw)).public() == replay(raw).public()


def test_the_undo_need_not_follow_the_entry_it_takes_back():
    # A scoreboard secret round lets public actions come between the entry and its undo.
    raw = lines(scoreboard(), {"type": "secret", "seat": 0, "value": 4242}, {"type": "add", "seat": 1, "points": 3},
                UNDO, UNDO, {"type": "add", "seat": 0, "points": 1})
    assert public_log(raw) == lines(scoreboard(), {"type": "add", "seat": 1, "points": 3}, UNDO,
                                    {"type": "add", "seat": 0, "points": 1})
    assert replay(public_log(raw)).state == replay(raw).state


def test_an_entry_revealed_once_stays_even_when_the_reveal_is_undone():
    raw = lines(THIRD_MAN, bid(0, 5), bid(1, 7), bid(2, 8), bid(3, 1), UNDO, UNDO, UNDO)
    assert public_log(raw) == raw
    # ... while one entered after the reveal was undone, and taken back, goes.
    raw2 = raw[:7] + lines(bid(2, 4), UNDO)
    assert public_log(raw2) == raw[:7]


def test_the_timeline_itself_keeps_the_public_log():
    t = Timeline()
    for action in (THIRD_MAN, bid(0, 5), bid(1, 7)):
        t.apply(action)
    pending = t.check(UNDO)
    assert pending.drops == 2
    t.push(pending)
    assert t.log == [THIRD_MAN, bid(0, 5)]
    assert t.public()["pending"] == {"lead_card": 5, "entered": [0]}


def test_history_steps_and_redacted_lines_come_from_the_public_log():
    raw = lines(THIRD_MAN, bid(0, 5), bid(1, 7), UNDO, bid(1, 3))
    steps = public_steps(raw)
    assert [s["n"] for s in steps] == [1, 2, 3]
    assert [s["action"] for s in steps] == [THIRD_MAN, bid(0, 5), {"type": "bid", "seat": 1, "card": None}]
    assert steps[-1]["state"]["pending"] == {"lead_card": 5, "entered": [0, 1]}
    assert '"card": 7' not in json.dumps([s["action"] for s in steps])


def test_the_public_prefix_stops_at_the_first_secret_still_unrevealed():
    raw = lines(THIRD_MAN, bid(0, 5), bid(1, 7), bid(2, 8))
    assert public_prefix(raw) == lines(THIRD_MAN, bid(0, 5))
    assert public_prefix(raw + lines(bid(3, 1))) == raw + lines(bid(3, 1))
    assert public_prefix(raw + lines(bid(3, 1), UNDO)) == raw + lines(bid(3, 1), UNDO)


def test_a_damaged_log_keeps_its_lines_past_the_break_as_stored():
    raw = lines(THIRD_MAN, bid(0, 5), bid(1, 7), UNDO) + ['{"type": "bid", "seat": 9}', "not json"]
    assert public_log(raw) == lines(THIRD_MAN, bid(0, 5)) + raw[4:]
    assert public_prefix(raw) == lines(THIRD_MAN, bid(0, 5))


# -- properties over random tables -----------------------------------------------------------

def taken_back(raw: list[str]) -> set[int]:
    """An oracle written apart from the timeline's bookkeeping: the indexes
    in ``raw`` of each secret entry whose hidden keys stayed hidden from its
    push until the undo that popped it, and of that undo."""
    t = Timeline()
    stack: list[int] = []            # raw indexes of the actions in effect
    watch: dict[int, set] = {}       # raw index -> hidden keys it added, while never revealed
    gone: set[int] = set()
    for i, text in enumerate(raw):
        action = parse_line(text)
        before = set(t.state.hidden) if t.started else set()
        pending = t.check(action)
        t.push(pending)
        if action["type"] == "undo":
            j = stack.pop()
            if j in watch:
                gone.update((i, j))
                del watch[j]
            continue
        stack.append(i)
        after = set(t.state.hidden)
        if pending.step.secret and after - before:
            watch[i] = after - before
        for j, keys in list(watch.items()):
            if not keys <= after:          # a key left without an undo: revealed
                del watch[j]
    return gone


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(SECRET_GAMES))
def test_the_public_log_drops_exactly_the_pairs_and_replays_to_the_same_state(data, game):
    t, raw = play(data, game, 40)
    public = public_log(raw)
    gone = taken_back(raw)
    assert public == [line for i, line in enumerate(raw) if i not in gone]
    again = replay(public)
    assert again.state == replay(raw).state == t.state
    for seat in range(len(t.players)):
        assert again.private(seat) == t.private(seat)
    assert public_log(public) == public
    assert [json.loads(line) for line in public] == t.log


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(SECRET_GAMES))
def test_the_public_prefix_only_grows_and_holds_no_pending_secret(data, game):
    _t, raw = play(data, game, 30)
    sent: list[str] = []
    for k in range(1, len(raw) + 1):
        prefix = public_prefix(raw[:k])
        assert prefix[:len(sent)] == sent, f"line {len(sent)} changed after {k} lines"
        assert prefix == public_log(raw[:k])[:len(prefix)]
        # nothing in it is still hidden: its redacted rendering is the line itself
        steps = public_steps(prefix)
        assert [s["action"] for s in steps] == [json.loads(line) for line in prefix]
        sent = prefix
