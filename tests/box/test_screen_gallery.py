"""The box's screens, game by game, as pictures for wiring.md ("Screens").

Each game is played on the mock box: the screens are reached through the
mock pins (``box.press`` / ``box.hold``) and the other seats' entries come
from a phone (``session.submit(..., source="web")``), as at a table.  Every
screen shown is saved at scale 2 (256x128) under ``docs/screens/``.

    COMPANION_UPDATE_SCREENS=1 .venv/bin/python -m pytest -q tests/box/test_screen_gallery.py

rewrites the pictures (after a change of the screens, or of the text
drawing in hardware/draw.py: run it after such a merge, look at the
pictures, commit them).  Without it, the test checks that the committed
pictures are what the box draws now, and that wiring.md shows each one.

The same games are also played in French (their pictures, at 4x, go to
test-artifacts/screens-fr/, not committed): there, no text of any screen
may be cut short.  In both languages every game screen has a
hint line naming OK and BACK, but FIGHT?'s grid (its bottom line is the
turn being entered) and a message over it.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from companion.games.fight import legal_changes
from hardware.testing import box_config
from hardware.ui.diabolo import DEFAULT_COLOURS

from box_support import make_box, mock_factory, record_cut_texts  # noqa: F401 (fixtures)
from test_box_fight import hint_shown
from test_box_screens import reach_plus_20 as best_bid   # the furthest-reaching bid: a round ends soon

ROOT = Path(__file__).resolve().parents[2]
SCREENS = ROOT / "docs" / "screens"
ARTIFACTS = ROOT / "test-artifacts" / "screens-fr"
WIRING = ROOT / "wiring.md"
UPDATE = os.environ.get("COMPANION_UPDATE_SCREENS") == "1"
FOUR = ["Ann", "Ben", "Chloé", "Dan"]
NO_HINT_LINE = {"fight_play", "fight_change", "fight_out"}


class Gallery:
    """Saves (or checks) each screen the box shows, by name."""

    def __init__(self, box, session, language: str, cut: set):
        self.box, self.session, self.language, self.cut = box, session, language, cut
        self.names: list[str] = []
        self.texts: dict[str, list[str]] = {}

    def web(self, action: dict) -> None:
        """A phone's entry; the box has followed it once this returns."""
        self.session.submit(action, source="web")
        self.box.flush()

    def press(self, *keys: str) -> None:
        for key in keys:
            self.box.press(key)

    def snap(self, name: str) -> list[str]:
        self.box.flush()
        png = self.box.frame_png(2, mirror=False)
        self.names.append(name)
        self.texts[name] = texts = list(self.box.frame.texts)
        if name not in NO_HINT_LINE:
            assert any("OK" in t and "BACK" in t for t in texts), f"{name} ({self.language}): no hint line in {texts}"
        assert not self.cut, f"{name} ({self.language}): texts cut short: {sorted(self.cut)}"
        path = SCREENS / f"{name}.png"
        if self.language != "en":
            # Not committed: the French screens at 4x, to look at (test-artifacts/screens-fr/).
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / f"{name}.png").write_bytes(self.box.frame_png(4, mirror=False))
            return texts
        if UPDATE:
            SCREENS.mkdir(parents=True, exist_ok=True)
            path.write_bytes(png)
        else:
            assert path.exists(), f"no {path.name}: run COMPANION_UPDATE_SCREENS=1 (see this file's docstring)"
            actual = Image.open(io.BytesIO(png)).convert("L")
            expected = Image.open(path).convert("L")
            diff = ImageChops.difference(actual, expected).getbbox()
            assert diff is None, (f"{path.name} is not what the box draws now (region {diff}; it shows "
                                  f"{' | '.join(self.box.frame.texts)}): look, then COMPANION_UPDATE_SCREENS=1")
        return self.texts[name]


@pytest.fixture(params=["en", "fr"])
def gallery(request, make_box, session, monkeypatch):
    cut = record_cut_texts(monkeypatch)
    box = make_box(box_config(bounce_ms=1, language=request.param))
    return Gallery(box, session, request.param, cut)


def test_third_man(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "third-man", "players": FOUR, "options": {"tokens_to_win": 2}})
    g.snap("third_man_track")
    g.press("ok", "up", "up", "up")
    g.snap("third_man_lead")
    g.press("ok")
    g.snap("third_man_pass")
    g.box.hold("back")
    g.snap("third_man_undo_lead")
    g.press("back", "ok")
    g.snap("third_man_pick")
    g.press("up", "ok")
    g.box.hold("back")
    g.snap("third_man_undo_secret")
    g.press("back")
    g.web({"type": "bid", "seat": 2, "card": 7})
    g.web({"type": "bid", "seat": 3, "card": 1})
    g.snap("third_man_reveal")
    g.press("ok", "up")
    g.snap("third_man_last_bid")
    g.press("ok")
    while not s.public()["rounds"]:
        p = s.public()
        cards = best_bid(p)
        for k in range(4):
            seat = (p["lead"] + k) % 4
            g.web({"type": "bid", "seat": seat, "card": cards[seat]})
    g.press("ok")
    g.snap("third_man_round_over")
    g.press("ok")
    while not s.public()["finished"]:
        p = s.public()
        cards = best_bid(p)
        for k in range(4):
            seat = (p["lead"] + k) % 4
            g.web({"type": "bid", "seat": seat, "card": cards[seat]})
    g.press("ok", "ok")
    g.snap("third_man_match_over")


def test_costly_tricks(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "costly-tricks", "players": ["Ann", "Ben"],
              "options": {"hands_to_win": 1}})
    g.snap("costly_tricks_deal")
    g.press("ok")
    g.snap("costly_tricks_trick")
    g.press("down", "ok")
    g.snap("costly_tricks_points")
    g.press("ok", "ok")
    g.box.hold("back")
    g.snap("costly_tricks_undo")
    g.press("back")
    for winner, points in [(2, 24), (1, 10), (3, 12), (0, 28), (1, 15), (2, 26), (0, 20), (3, 14), (2, 18)]:
        g.web({"type": "trick", "winner": winner, "points": points})
    g.web({"type": "trick", "winner": 0, "points": 33})
    g.snap("costly_tricks_match_over")


def test_costly_tricks_hand_over(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "costly-tricks", "players": ["Ann", "Ben"]})
    g.web({"type": "deal", "lead": 0})
    for winner, points in [(0, 30), (2, 24), (1, 10), (3, 12), (0, 28), (1, 15), (2, 26), (0, 20), (3, 14),
                           (2, 18), (1, 23)]:
        g.web({"type": "trick", "winner": winner, "points": points})
    g.snap("costly_tricks_hand_over")


def test_sloppy_seconds(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "sloppy-seconds", "players": FOUR, "options": {"target": 100}})
    g.snap("sloppy_seconds_table")
    g.press("ok")
    g.snap("sloppy_seconds_entry")
    ctrl = g.box.app.controller
    for _ in range(12):
        g.press("ok", "ok")
    g.snap("sloppy_seconds_confirm")
    g.press("ok")
    g.snap("sloppy_seconds_hand_scored")
    g.press("ok", "up")
    g.snap("sloppy_seconds_last_hand")
    g.press("ok")
    assert ctrl.mode == "table"
    g.box.hold("back")
    g.snap("sloppy_seconds_undo")
    g.press("back")
    full = {"S": 91, "H": 91, "D": 91, "C": 91}
    nothing = {"S": 0, "H": 0, "D": 0, "C": 0}
    while not s.public()["finished"]:
        g.web({"type": "hand", "points": [dict(full), dict(nothing), dict(nothing), dict(nothing)]})
    g.snap("sloppy_seconds_game_over")


def test_fight(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "fight", "players": ["Ann", "Ben", "Chloé"]})
    g.snap("fight_play")
    g.press("ok")
    g.snap("fight_change")
    g.press("back", "up", "ok")
    hint_shown(g.box)                 # the search runs in the hint process: the answer, not "thinking…"
    g.snap("fight_hint")
    g.press("back", "down", "ok", "ok")
    g.box.hold("back")
    g.snap("fight_undo")
    g.press("back")
    while not s.public()["finished"]:
        p = s.public()
        before_out = list(p["out"])
        seat = p["turn"]
        coin = max(int(v) for v, n in p["coins"][seat].items() if n)
        g.web({"type": "turn", "seat": seat, "play": coin, "take": list(legal_changes(p["table"], coin)[-1])})
        if len(s.public()["out"]) > len(before_out) and not s.public()["finished"] and "fight_out" not in g.names:
            g.snap("fight_out")
            g.press("ok")
    g.snap("fight_game_over")


def test_yenta(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "yenta", "players": FOUR, "options": {"target": 100}})
    g.press("down")
    g.snap("yenta_bid")
    g.press("ok")
    g.snap("yenta_bid_amount")
    g.press("ok", "ok")
    g.snap("yenta_turn")
    g.press("down", "ok")
    g.snap("yenta_value")
    g.press("up", "ok")
    g.snap("yenta_hit")
    g.press("ok")
    g.box.hold("back")
    g.snap("yenta_undo")
    g.press("back")
    while g.box.app.controller.mode != "last":
        yenta_step(g)
    g.snap("yenta_last_dice")
    hands = len(s.public()["hands"])
    while len(s.public()["hands"]) == hands:
        yenta_step(g)
    assert not s.public()["finished"]
    g.snap("yenta_hand_over")
    while not s.public()["finished"]:
        yenta_step(g)
    g.snap("yenta_game_over")


def yenta_step(g) -> None:
    """One entry from a phone: Ann bids 0; asks for 6s hit while the asker
    has dice to spare, else miss; the last seat with dice shows sixes."""
    p = g.session.public()
    if p["bidder"] is None:
        g.web({"type": "bid", "seat": 0, "amount": 0})
    elif sum(1 for n in p["dice"] if n) > 1:
        seat = p["turn"]
        target = next(t for t in range(len(p["players"])) if t != seat and p["dice"][t])
        g.web({"type": "ask", "seat": seat, "target": target, "value": 6, "hit": p["dice"][seat] > 1})
    else:
        g.web({"type": "last", "seat": p["turn"], "dice": [6] * p["dice"][p["turn"]]})


def test_diabolo(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Chloé"]})
    g.snap("diabolo_table")
    g.press("ok")
    g.snap("diabolo_colour")
    g.press("ok", "up", "up", "up", "up", "up", "up", "up", "up", "up", "ok", "up", "up", "up")
    g.snap("diabolo_row")
    g.press("ok")
    g.snap("diabolo_pass")
    g.press("ok")
    g.snap("diabolo_double")
    g.press("ok")
    g.box.hold("back")
    g.snap("diabolo_undo")
    g.press("back")
    while g.box.app.controller.mode == "pass":
        g.press("ok", "ok")
    g.press("up", "up", "ok", "up", "ok")                  # Ann: 11
    g.snap("diabolo_hands")
    g.press("up", "up", "up", "up", "ok", "ok")            # Ben: 20
    g.press("up", "ok", "down", "ok")                      # Chloé: 4
    g.snap("diabolo_scored")
    colours = list(DEFAULT_COLOURS)                        # as the box stores them: ids ("red"), shown in its language
    for color in colours[1:]:
        g.web({"type": "score", "color": color, "hands": [5, 10, 20], "heaven": 3, "hell": 9})
    g.press("ok")
    g.snap("diabolo_round_over")
    while not s.public()["finished"]:
        p = s.public()
        left = [c for c in colours if c not in p["scored"]]
        g.web({"type": "score", "color": left[0], "hands": [5, 10, 20], "heaven": 3, "hell": 9})
    g.press("ok")
    g.snap("diabolo_game_over")


def test_scoreboard(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "scoreboard", "players": FOUR})
    g.web({"type": "add", "seat": 0, "points": 12})
    g.web({"type": "token", "seat": 2, "delta": 1})
    g.snap("scoreboard_list")
    g.press("down", "ok", "up", "up", "up")
    g.snap("scoreboard_edit")
    g.press("ok")
    g.box.hold("back")
    g.snap("scoreboard_undo_points")
    g.press("back", "up", "up", "ok")
    g.snap("scoreboard_pass")
    g.press("ok", "up", "up", "up", "up")
    g.snap("scoreboard_secret")
    g.press("ok")
    g.box.hold("back")
    g.snap("scoreboard_undo_secret")
    g.press("back")
    for seat, value in [(1, 7), (2, 4), (3, 9)]:
        g.web({"type": "secret", "seat": seat, "value": value})
    g.snap("scoreboard_reveal")


def test_scoreboard_game_over(gallery):
    g, s = gallery, gallery.session
    s.submit({"type": "new_game", "game": "scoreboard", "players": FOUR, "options": {"target": 50}})
    g.web({"type": "add", "seat": 1, "points": 30})
    g.web({"type": "add", "seat": 3, "points": 51})
    g.snap("scoreboard_game_over")


def test_every_picture_is_in_wiring_md():
    """wiring.md's Screens section shows every picture, and no picture that is gone."""
    text = WIRING.read_text(encoding="utf-8")
    on_disk = {p.name for p in SCREENS.glob("*.png")}
    assert on_disk, "no pictures in docs/screens"
    shown = {name for name in on_disk if f"docs/screens/{name}" in text}
    assert shown == on_disk, f"wiring.md does not show {sorted(on_disk - shown)}"
