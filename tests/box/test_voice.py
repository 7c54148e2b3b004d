"""The box's voice (hardware/voice.py): what it would say, in both
languages, when the setting is on; never anything while it is off; a new
utterance cuts the one still spoken; a missing espeak-ng is one notice and
silence.  The audio itself is not tested: the runner is injected (it still
starts a real, silent process, so terminating one is real too)."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)
from conftest import SCENARIOS
from hardware import voice as voice_module
from hardware.testing import box_config
from hardware.voice import NO_ESPEAK, Voice

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]


class Recorder:
    """A runner that notes each command and starts ``program`` (a real process) instead."""

    def __init__(self, program=("true",)):
        self.program = list(program)
        self.commands: list[list[str]] = []
        self.processes: list[subprocess.Popen] = []

    def __call__(self, argv, **kwargs):
        self.commands.append(list(argv))
        process = subprocess.Popen(self.program, **kwargs)
        self.processes.append(process)
        return process

    def texts(self) -> list[str]:
        return [argv[-1] for argv in self.commands]

    def close(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(5)


@pytest.fixture
def recorder():
    r = Recorder()
    yield r
    r.close()


def spoken(session, language, actions, recorder, speak=True):
    """Play ``actions`` with a voice following the session; what it said."""
    config = {"speak": speak, "language": language}
    voice = Voice(config, runner=recorder)
    voice.previous = session.public()
    unsubscribe = session.subscribe(voice.follow)
    try:
        for action in actions:
            session.submit(action)
    finally:
        unsubscribe()
    return recorder.texts()


def bids(lead, cards):
    """One Third Man bid: the lead first, then the others, clockwise."""
    return [{"type": "bid", "seat": (lead + k) % 4, "card": cards[(lead + k) % 4]} for k in range(4)]


def third_man(**options):
    return {"type": "new_game", "game": "third-man", "players": PLAYERS, "options": options}


def test_third_man_reveals_round_end_and_winner_in_english(session, recorder):
    session.submit(third_man(tokens_to_win=2))
    said = spoken(session, "en", bids(0, [8, 9, 9, 0]) + bids(0, [6, 5, 0, 4]), recorder)
    assert said == [
        "Revealed: Ann 8, Ben 9, Chloé 9, Dan 0.",
        "Revealed: Ann 6, Ben 5, Chloé 0, Dan 4. Round 1 over. Scores: Ann 20, Ben -9, Chloé -4, Dan 8. "
        "Ann takes the token.",
    ]
    # Nothing while a bid is entered: the secret cards are never said.
    assert all(argv[:4] == ["espeak-ng", "-v", "en", "--"] for argv in recorder.commands)


def test_the_winner_and_the_round_in_french(session, recorder):
    session.submit(third_man(tokens_to_win=1))
    said = spoken(session, "fr", bids(0, [8, 9, 9, 0]) + bids(0, [6, 5, 0, 4]), recorder)
    assert said[0] == "Cartes révélées\u00a0: Ann 8, Ben 9, Chloé 9, Dan 0."
    assert said[1] == ("Cartes révélées\u00a0: Ann 6, Ben 5, Chloé 0, Dan 4. Manche 1 terminée. "
                       "Scores\u00a0: Ann 20, Ben -9, Chloé -4, Dan 8. Ann gagne\u00a0!")
    assert recorder.commands[0][:3] == ["espeak-ng", "-v", "fr"]


@pytest.mark.parametrize("language, text", [("en", "Revealed: Ann 9, Ben 4."),
                                            ("fr", "Cartes révélées\u00a0: Ann 9, Ben 4.")])
def test_a_secret_round_of_the_scoreboard_is_said_once_revealed(session, recorder, language, text):
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    said = spoken(session, language, [{"type": "secret", "seat": 0, "value": 9},
                                      {"type": "secret", "seat": 1, "value": 4}], recorder)
    assert said == [text]


@pytest.mark.parametrize("language, text", [("en", "Hand 1 over. Scores: Ann 23, Ben 64, Cat 30, Dan 5."),
                                            ("fr", "Donne 1 terminée. Scores\u00a0: Ann 23, Ben 64, Cat 30, Dan 5.")])
def test_the_end_of_a_hand_is_said_with_its_points(session, recorder, language, text):
    lines = (SCENARIOS / "sloppy-seconds" / "hand_entry.jsonl").read_text(encoding="utf-8").splitlines()
    session.submit(json.loads(lines[0]))
    assert spoken(session, language, [json.loads(line) for line in lines[1:]], recorder) == [text]


def test_nothing_is_said_while_off_or_for_an_undo(session, recorder):
    session.submit(third_man())
    assert spoken(session, "en", bids(0, [8, 9, 9, 0]), recorder, speak=False) == []
    assert spoken(session, "en", [{"type": "undo"}], recorder) == []
    assert recorder.commands == []


def test_a_new_utterance_cuts_the_one_still_spoken():
    recorder = Recorder(program=("sleep", "3600"))
    voice = Voice({"speak": True}, runner=recorder)
    try:
        voice.say("one", "en")
        first = recorder.processes[0]
        # The box's thread never waits for the voice: the call returns while
        # the first utterance (an hour long) would still be speaking.
        caller = threading.Thread(target=voice.say, args=("two", "en"))
        caller.start()
        caller.join(60)
        assert not caller.is_alive(), "the box's thread waited for the voice"
        assert first.wait(60) != 0                     # terminated
        assert recorder.processes[1].poll() is None    # the new one speaks
        assert voice.said == ["one", "two"]
    finally:
        recorder.close()


def test_without_espeak_ng_the_table_is_told_once(monkeypatch):
    monkeypatch.setattr(voice_module, "COMMAND", "espeak-ng-not-installed-here")
    notices = []
    voice = Voice({"speak": True}, notify=notices.append)      # the real subprocess.Popen
    voice.say("one", "en")
    voice.say("two", "en")
    assert notices == [NO_ESPEAK]
    assert voice.said == []


def test_the_box_speaks_what_a_phone_revealed_and_reports_a_missing_espeak(make_box, session, recorder,
                                                                        monkeypatch):
    box = make_box(config=box_config(speak=True))
    box.voice.runner = recorder
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    session.submit({"type": "secret", "seat": 0, "value": 9})
    session.submit({"type": "secret", "seat": 1, "value": 4})
    box.flush()
    assert recorder.texts() == ["Revealed: Ann 9, Ben 4."]

    monkeypatch.setattr(voice_module, "COMMAND", "espeak-ng-not-installed-here")
    box.voice.runner = subprocess.Popen
    session.submit({"type": "secret", "seat": 0, "value": 1})
    session.submit({"type": "secret", "seat": 1, "value": 2})
    box.flush()
    assert session.table.notices == [(NO_ESPEAK, {})]
    assert any("espeak-ng" in text for text in box.frame.texts)       # the notice is on the box


def test_the_menu_turns_the_voice_on_and_keeps_it(make_box, session):
    box = make_box()
    assert box.config.get("speak") is False
    box.press("ok")                                   # the menu (no game)
    for _ in range(8):
        if box.app.layers[-1].rows()[box.app.layers[-1].cursor][0] == "Speak":
            break
        box.press("down")
    assert "off" in box.frame.texts
    box.press("ok")
    assert box.config["speak"] is True and "on" in box.frame.texts
    saved = (session.store.dir / "companion.toml").read_text(encoding="utf-8")
    assert "speak = true" in saved
