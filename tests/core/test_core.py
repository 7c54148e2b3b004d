"""The framework: strict actions, new_game, undo, the fold, the CLI contract."""

from __future__ import annotations

import json
import subprocess

import pytest

from companion.errors import IllegalActionError, InvalidActionError, NothingToUndo
from companion.timeline import ReplayError, Timeline, replay


def new(game="scoreboard", players=("Ann", "Ben"), **options):
    action = {"type": "new_game", "game": game, "players": list(players)}
    if options:
        action["options"] = options
    return action


def lines(*actions):
    return [json.dumps(a) for a in actions]


class TestNewGame:
    def test_unknown_game(self):
        with pytest.raises(InvalidActionError, match="unknown game"):
            Timeline().apply(new(game="chess"))

    @pytest.mark.parametrize("players, why", [
        ([], "entries"), (["Ann", "Ann"], "distinct"), (["Ann", ""], "empty"),
        (["A" * 25], "longer than 24"), (["Ann", 3], "string"),
    ])
    def test_bad_players(self, players, why):
        with pytest.raises(InvalidActionError, match=why):
            Timeline().apply({"type": "new_game", "game": "scoreboard", "players": players})

    def test_unknown_option_is_an_error(self):
        with pytest.raises(InvalidActionError, match="unknown key 'colour'"):
            Timeline().apply(new(colour=1))

    def test_option_must_be_an_integer_not_a_float_or_bool(self):
        for bad in (3.0, True, "3"):
            with pytest.raises(InvalidActionError):
                Timeline().apply(new(target=bad))

    def test_second_new_game_in_a_log(self):
        t = Timeline()
        t.apply(new())
        with pytest.raises(IllegalActionError, match="second new_game"):
            t.apply(new())

    def test_first_action_must_be_new_game(self):
        with pytest.raises(IllegalActionError, match="first action must be new_game"):
            Timeline().apply({"type": "add", "seat": 0, "points": 1})


class TestStrictActions:
    @pytest.mark.parametrize("action, why", [
        ({"type": "add", "seat": 0}, "missing key 'points'"),
        ({"type": "add", "seat": 0, "points": 1, "extra": 1}, "unknown key 'extra'"),
        ({"type": "add", "seat": 0, "points": 1.0}, "whole number"),
        ({"type": "add", "seat": True, "points": 1}, "seat"),
        ({"type": "add", "seat": 2, "points": 1},
         r"2 is not a seat of this table: its 2 seats are 1 to 2 \(sent as 0 to 1 in 'seat'\)"),
        ({"type": "add", "seat": -1, "points": 1}, "-1 is not a seat of this table"),
        ({"type": "fly", "seat": 0}, "unknown action 'fly'"),
        ({"seat": 0}, "no 'type'"),
        ({"type": "undo", "steps": 2}, "unknown key 'steps'"),
    ])
    def test_refused_and_nothing_changes(self, action, why):
        t = Timeline()
        t.apply(new())
        before = t.public()
        with pytest.raises(InvalidActionError, match=why):
            t.apply(action)
        assert t.public() == before
        assert len(t.log) == 1


class TestUndo:
    def test_undo_cancels_the_latest_action_in_effect_repeatedly(self):
        t = Timeline()
        t.apply(new())
        t.apply({"type": "add", "seat": 0, "points": 5})
        t.apply({"type": "add", "seat": 1, "points": 7})
        t.apply({"type": "undo"})
        assert t.public()["scores"] == [5, 0]
        t.apply({"type": "undo"})
        assert t.public()["scores"] == [0, 0]
        with pytest.raises(NothingToUndo):
            t.apply({"type": "undo"})
        assert len(t.log) == 5  # undo is part of the log

    def test_undo_is_allowed_after_the_end(self):
        t = Timeline()
        t.apply(new(target=10))
        t.apply({"type": "add", "seat": 1, "points": 12})
        assert t.public()["finished"] is True
        with pytest.raises(IllegalActionError, match="over"):
            t.apply({"type": "add", "seat": 0, "points": 1})
        t.apply({"type": "undo"})
        assert t.public()["finished"] is False and t.public()["winner"] is None


class TestReplay:
    def test_blank_lines_are_skipped_and_numbers_count_them(self):
        log = ["", json.dumps(new()), "   ", '{"type": "add", "seat": 9, "points": 1}']
        with pytest.raises(ReplayError) as info:
            replay(log)
        assert info.value.line == 4

    def test_empty_log_fails_at_line_1(self):
        with pytest.raises(ReplayError) as info:
            replay(["", "  "])
        assert info.value.line == 1

    def test_same_log_same_output(self):
        log = lines(new(), {"type": "add", "seat": 0, "points": 3}, {"type": "secret", "seat": 1, "value": 4})
        assert replay(log).public() == replay(log).public()

    @pytest.mark.parametrize("text", ["[1, 2]", "42", "null", '"new_game"', "{", "{" * 5000 + "}" * 5000])
    def test_non_objects_and_broken_json(self, text):
        with pytest.raises(ReplayError) as info:
            replay([json.dumps(new()), text])
        assert info.value.line == 2


class TestCommand:
    def run(self, cmd, args, stdin=None):
        return subprocess.run(cmd + args, input=stdin, capture_output=True, timeout=60)

    def test_replay_from_stdin(self, companion_cmd):
        log = "\n".join(lines(new(), {"type": "add", "seat": 1, "points": 4})).encode()
        run = self.run(companion_cmd, ["replay", "-"], stdin=log)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["scores"] == [0, 4]

    def test_not_utf8_is_a_line_error(self, companion_cmd, tmp_path):
        f = tmp_path / "log.jsonl"
        f.write_bytes(json.dumps(new()).encode() + b"\n\xff\xfe{\n")
        run = self.run(companion_cmd, ["replay", str(f)])
        assert run.returncode == 2 and run.stdout == b""
        assert run.stderr.startswith(b"line 2:")

    def test_missing_file_is_a_clear_error(self, companion_cmd, tmp_path):
        run = self.run(companion_cmd, ["replay", str(tmp_path / "nope.jsonl")])
        assert run.returncode == 2
        assert b"Traceback" not in run.stderr and b"nope.jsonl" in run.stderr

    def test_bad_usage_no_traceback(self, companion_cmd):
        run = self.run(companion_cmd, ["frobnicate"])
        assert run.returncode == 2 and b"Traceback" not in run.stderr
