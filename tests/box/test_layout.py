"""The layout check (issue 19): every frame the box draws, checked by
:func:`hardware.layout.problems` — no glyph on the panel's clear edge, no
text's ink drawn over, a highlighted text inside a whole bar, no two items
overlapping.

Every game is played through the screen gallery's walks (tests/box/test_screen_gallery.py)
and through random walks of the buttons, in English and French, with the
gallery's short names, long accented names and names of the longest length
the roster allows (MAX_NAME).  Every canvas the box draws is checked.

Games whose own screens still break a rule are marked ``xfail(strict=True)``
per game with the reason (stage 2 of issue 19 lays them out again); the
shared screens (menus, pass screen, hint line, generic screen) must pass.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from PIL import Image

import test_screen_gallery as gallery_walks
from companion.timeline import MAX_NAME
from hardware import box as box_module
from hardware import draw as d
from hardware.layout import problems
from hardware.testing import box_config
from hardware.ui import base
from hardware.ui.app import App

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

LONG = ["Marc-Antoine", "Éloïse", "Zoé", "Ingrid", "Łukasz Øster-Ñúñez"]
LONGEST = [(n * 3)[:MAX_NAME] for n in ("Marc-Antoine Ébrard-Gély ", "Marc-Bernard Ørsted ",
                                           "Zoé Łukasiewicz-Øyg ", "Ingrid Ålgård-Pýtheàs ",
                                           "Łukasz Øster-Ñúñez ")]
NAMES = {"short": None, "long": LONG, "longest": LONGEST}


# -- the checker itself ----------------------------------------------------------

def test_a_clean_frame_has_no_problem():
    c = d.Canvas()
    c.header("Menu", "1/5")
    c.row(d.ROW_Y, "Éloïse", True, right="\u2713")
    c.row(d.ROW_Y + d.PITCH, "Ingrid gjy", False)
    base.hint_line(c, "OK: next · BACK: menu")
    assert problems(c) == []


def test_a_text_cut_by_the_edge_is_found():
    c = d.Canvas()
    c.text(d.WIDTH - 10, 20, "Ingrid")
    assert any(p.startswith("edge") for p in problems(c))
    c = d.Canvas()
    c.text(0, 20, "Ingrid")             # ink on column 0: the clear margin
    assert any(p.startswith("edge") for p in problems(c))


def test_a_text_drawn_over_is_found():
    c = d.Canvas()
    c.text(10, 20, "Ingrid")
    c.fill(0, 30, d.WIDTH - 1, 40, d.OFF)      # clears the g's tail
    assert any(p.startswith("cut") for p in problems(c))


def test_an_overlap_is_found():
    c = d.Canvas()
    c.text(10, 20, "Ingrid")
    c.text(30, 25, "Zoé")
    assert any(p.startswith("overlap") for p in problems(c))
    c = d.Canvas()
    c.text(10, 20, "Ingrid")
    c.hline(0, d.WIDTH - 1, 26)
    assert any(p.startswith("overlap") for p in problems(c))


def test_a_short_bar_is_found():
    c = d.Canvas()
    c.fill(0, 20, d.WIDTH - 1, 29)             # 10 rows: shorter than the line of "Éloïse"
    c.text(2, 20, "Éloïse gj", fill=d.OFF)
    assert any(p.startswith("bar") for p in problems(c))
    c = d.Canvas()
    c.row(d.ROW_Y + d.PITCH, "Éloïse gj", True)   # the grid's bar: whole
    assert problems(c) == []


def test_a_panel_hides_what_it_covers():
    c = d.Canvas()
    c.text(10, 20, "Ingrid")
    c.panel(["Not your turn"])
    assert problems(c) == []


# -- the type ----------------------------------------------------------------------

ROSTER_LETTERS = [chr(i) for i in list(range(0x21, 0x7F)) + list(range(0xA1, 0x180)) if chr(i) != "\u00ad"]


@pytest.mark.parametrize("font_name", sorted(d.ALL_FONTS))
def test_every_latin_letter_has_its_glyph(font_name):
    font = d.ALL_FONTS[font_name]
    missing = [ch for ch in ROSTER_LETTERS if not d.has_glyph(ch, font)]
    assert not missing, f"{font_name} lacks {''.join(missing)}"


def test_a_missing_glyph_is_detected():
    assert not d.has_glyph("\u4e2d")       # a CJK character: Terminus has none


def test_a_line_holds_accents_and_descenders():
    for font in (d.SMALL, d.BODY, d.STRONG):
        top, bottom = d.line_extent(font)
        assert (top, bottom) == (-d.BASELINE, d.LINE - d.BASELINE)


def test_short_names_stay_distinct():
    table = ["Marc-Antoine", "Marc-Bernard", "Zoé"]
    a = base.short_name("Marc-Antoine", table, d.text_width("Marc-An.", d.BODY))
    b = base.short_name("Marc-Bernard", table, d.text_width("Marc-An.", d.BODY))
    assert a != b and a.endswith(".") and b.endswith(".")
    assert base.short_name("Zoé", table, 60) == "Zoé"


# -- every screen of every game ----------------------------------------------------

FAILING: dict = {}          # every game's own screens pass (issue 19 stage 2)

WALKS = ["test_third_man", "test_costly_tricks", "test_costly_tricks_hand_over", "test_sloppy_seconds",
         "test_fight", "test_yenta", "test_diabolo", "test_scoreboard", "test_scoreboard_game_over"]


class Recorder:
    """Every canvas the box draws (patched into hardware.box)."""

    def __init__(self, monkeypatch):
        self.canvases: list[d.Canvas] = []
        recorder = self

        class RecordingCanvas(d.Canvas):
            def __init__(self):
                super().__init__()
                recorder.canvases.append(self)
        monkeypatch.setattr(box_module, "Canvas", RecordingCanvas)
        draw = App.draw

        def draw_and_say_who(app, c):
            # Which screen drew the frame: a game's own (its controller) or a shared one.
            c.by = "game" if not (app.notices or app.claim_news or app.layers) and app.controller else "shared"
            c.game = getattr(app.controller, "game_id", None)
            draw(app, c)
        monkeypatch.setattr(App, "draw", draw_and_say_who)

    def count(self, by) -> int:
        return sum(1 for c in self.canvases if getattr(c, "by", "shared") == by)

    def failures(self, by=None, game=None) -> list[str]:
        seen, out = set(), []
        for c in self.canvases:
            if by is not None and getattr(c, "by", "shared") != by:
                continue
            if game is not None and by == "game" and getattr(c, "game", None) != game:
                continue          # another game, started from the menu by the walk: checked by its own walks
            key = c.image.tobytes() + repr(c.texts).encode()
            if key in seen:
                continue
            seen.add(key)
            found = problems(c)
            if found:
                out.append(f"{' | '.join(c.texts)}\n    " + "\n    ".join(found))
        return out


ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "layout"


def report(case: str, failures: list[str]) -> None:
    """Every failing frame of a case, in test-artifacts/layout/<case>.txt (for stage 2)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{case.replace('/', '_')}.txt"
    if failures:
        path.write_text("\n".join(failures) + "\n", encoding="utf-8")
    elif path.exists():
        path.unlink()


class LayoutGallery(gallery_walks.Gallery):
    def snap(self, name: str) -> list[str]:
        self.box.flush()
        self.texts[name] = list(self.box.frame.texts)
        return self.texts[name]


def renamed(session, names):
    """New games get ``names`` (as many as the walk asked for)."""
    if names is None:
        return
    submit = session.submit

    def submit_renamed(action, *args, **kwargs):
        if isinstance(action, dict) and action.get("type") == "new_game":
            action = dict(action, players=names[:len(action["players"])])
        return submit(action, *args, **kwargs)
    session.submit = submit_renamed


def layout_cases():
    for walk in WALKS:
        for language in ("en", "fr"):
            for names in NAMES:
                marks = []
                reason = FAILING.get((walk, names)) or FAILING.get(walk)
                if reason:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                yield pytest.param(walk, language, names, id=f"{walk[5:]}-{language}-{names}", marks=marks)


RESULTS: dict = {}       # (kind, case) -> {"shared": [...], "game": [...]}: each walk is played once


def gallery_walk(walk, language, names, make_box, session, monkeypatch) -> dict:
    key = ("gallery", walk, language, names)
    if key not in RESULTS:
        recorder = Recorder(monkeypatch)
        renamed(session, NAMES[names])
        box = make_box(box_config(bounce_ms=1, language=language))
        getattr(gallery_walks, walk)(LayoutGallery(box, session, language, set()))
        box.flush()
        RESULTS[key] = {"shared": recorder.failures("shared"), "game": recorder.failures("game")}
        report(f"gallery-{walk}-{language}-{names}", RESULTS[key]["shared"] + RESULTS[key]["game"])
    return RESULTS[key]


@pytest.mark.parametrize("walk,language,names", list(layout_cases()))
def test_every_frame_of_the_gallery_walks(walk, language, names, make_box, session, monkeypatch):
    """The game's own screens (xfail per game until stage 2 lays them out)."""
    failures = gallery_walk(walk, language, names, make_box, session, monkeypatch)["game"]
    assert not failures, f"{len(failures)} frame(s) break the layout:\n" + "\n".join(failures[:8])


@pytest.mark.parametrize("walk,language,names", [(w, lang, n) for w in WALKS for lang in ("en", "fr") for n in NAMES])
def test_every_shared_frame_of_the_gallery_walks(walk, language, names, make_box, session, monkeypatch):
    """Menus, undo, notices, the setup screens: drawn by the shared layers, they must pass now."""
    failures = gallery_walk(walk, language, names, make_box, session, monkeypatch)["shared"]
    assert not failures, f"{len(failures)} frame(s) break the layout:\n" + "\n".join(failures[:8])


RANDOM_GAMES = [("third-man", 4, {"tokens_to_win": 2}), ("costly-tricks", 2, {}), ("sloppy-seconds", 4, {}),
                ("fight", 3, {}), ("yenta", 4, {}), ("diabolo", 3, {}), ("scoreboard", 4, {})]
RANDOM_FAILING: dict = {}


def random_cases():
    for game, n, options in RANDOM_GAMES:
        for language in ("en", "fr"):
            for names in ("long", "longest"):
                reason = RANDOM_FAILING.get((game, language, names)) or RANDOM_FAILING.get(game)
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                yield pytest.param(game, n, options, language, names, id=f"{game}-{language}-{names}", marks=marks)


def random_walk(game, n, options, language, names, make_box, session, monkeypatch) -> dict:
    key = ("random", game, language, names)
    if key not in RESULTS:
        recorder = Recorder(monkeypatch)
        box = make_box(box_config(bounce_ms=1, language=language))
        session.submit({"type": "new_game", "game": game, "players": NAMES[names][:n], "options": options})
        box.flush()
        rng = random.Random(f"{game}{language}{names}")
        for _ in range(120):
            if rng.random() < 0.03:
                box.hold("back")                  # undo
            else:
                box.press(rng.choice(["up", "down", "ok", "ok", "back"]))
        box.flush()
        RESULTS[key] = {"shared": recorder.failures("shared"), "game": recorder.failures("game", game),
                        "shared frames": recorder.count("shared")}
        report(f"random-{game}-{language}-{names}", RESULTS[key]["shared"] + RESULTS[key]["game"])
    return RESULTS[key]


@pytest.mark.parametrize("game,n,options,language,names", list(random_cases()))
def test_every_frame_of_a_random_walk(game, n, options, language, names, make_box, session, monkeypatch):
    failures = random_walk(game, n, options, language, names, make_box, session, monkeypatch)["game"]
    assert not failures, f"{len(failures)} frame(s) break the layout:\n" + "\n".join(failures[:8])


@pytest.mark.parametrize("game,n,options,language,names",
                         [(g, n, o, lang, names) for g, n, o in RANDOM_GAMES for lang in ("en", "fr")
                          for names in ("long", "longest")])
def test_every_shared_frame_of_a_random_walk(game, n, options, language, names, make_box, session, monkeypatch):
    result = random_walk(game, n, options, language, names, make_box, session, monkeypatch)
    assert result["shared frames"], "the walk never opened a shared screen (menu, undo)"
    failures = result["shared"]
    assert not failures, f"{len(failures)} frame(s) break the layout:\n" + "\n".join(failures[:8])


def test_look_at_the_shared_screens(tmp_path):
    """Not a check: the shared screens at 4x in test-artifacts/layout/ to look at."""
    from pathlib import Path
    out = Path(__file__).resolve().parents[2] / "test-artifacts" / "layout"
    out.mkdir(parents=True, exist_ok=True)
    c = d.Canvas()
    base.pass_screen(c, "Round 2 · bid 3", "3/4", LONG[:3], LONG[4], others=LONG)
    assert problems(c) == []
    c.image.resize((d.WIDTH * 4, d.HEIGHT * 4), Image.NEAREST).save(out / "pass.png")


# -- the Phones screen's Wi-Fi page (issue 23) ---------------------------------------------------

@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("ssid,password", [
    (None, "k7mxq2wv9pzt"),                                  # the default name, a drawn password
    ("Table de Marc-Antoine Éloïse", "k7mxq2wv9pzt"),         # a name set in the settings
    ("Café; Łódź: \"3\"", "k7m;xq2\"wv9"),                    # escapes in the code
    ("companion-7f3a", "x" * 63),                            # a password no code can hold: spelled out
])
def test_the_wifi_page_is_whole(ssid, password, language, make_box, monkeypatch, tmp_path):
    """Every frame of the Wi-Fi page passes the layout check, and its lines
    hold the network's name and password whole (each cut only into lines)."""
    from appliance import setup, wifi

    ssid = ssid or wifi.default_ssid("Table de Marc-Antoine Éloïse", "m")
    data = tmp_path / "wifi-data"
    data.mkdir()
    setup.mark_done(data)               # a box that has its settings (set-up mode has its own screen)
    wifi.write_status(data, wifi.Status(mode="own", ssid=ssid, password=password, address=wifi.ADDRESS,
                                        backend="hostapd"))
    recorder = Recorder(monkeypatch)
    config = box_config(bounce_ms=1, language=language)
    config["data_dir"] = str(data)
    box = make_box(config)
    box.show_join(f"http://{wifi.ADDRESS}:8000/", "1234")
    box.flush()
    assert box.app.layers, "the Phones screen came up by itself"
    assert recorder.failures() == []
    texts = recorder.canvases[-1].texts
    joined = "".join(texts)
    assert ssid in joined and password in joined, texts
    assert not any("…" in t for t in texts), texts


@pytest.mark.parametrize("name", LONG + LONGEST + ["Ingrid", "Chloé", "François", "Ann"])
def test_an_abbreviation_drops_two_letters_or_more(name):
    """"Ingri." for "Ingrid" saves a letter and reads like a typo: a name
    cut short loses at least two letters, at every width."""
    for width in range(d.text_width("W.", d.BODY), d.text_width(name, d.BODY) + 1):
        shown = base.short_name(name, [name, "Ingmar", "Marc-Bernard"], width)
        if shown != name and shown.endswith("."):
            kept = shown[:-1]
            if name.startswith(kept):
                dropped = sum(ch.isalnum() for ch in name[len(kept):])
                assert dropped >= 2, (width, shown)
        assert d.text_width(shown, d.BODY) <= width or len(shown) <= 2, (width, shown)
@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_setup_screens_are_whole(language, make_box, monkeypatch, tmp_path):
    """Set-up from a phone (hardware/ui/setup.py): every frame of its screens,
    with long accented names, passes the layout check."""
    from appliance import setup, wifi
    from appliance.root import setup_apply as setup_root

    data = tmp_path / "setup-data"
    data.mkdir()
    wifi.write_status(data, wifi.Status(mode="own", ssid=wifi.default_ssid("Table de Marc-Antoine Éloïse", "m"),
                                        password="k7mxq2wv9pzt", address=wifi.ADDRESS, backend="networkmanager"))
    recorder = Recorder(monkeypatch)
    config = box_config(bounce_ms=1, language=language)
    config["data_dir"] = str(data)
    box = make_box(config)
    box.show_join(f"http://{wifi.ADDRESS}:8000/", "1234")
    box.flush()
    assert setup.in_setup_mode(data) and box.app.layers, "the set-up screen came up by itself"
    for status in ({"state": "joining", "ssid": "Maison de Marc-Antoine et d'Éloïse"},
                   {"state": "failed", "ssid": "Maison d'Éloïse", "reason": "wrong_password"},
                   {"state": "failed", "ssid": "Maison d'Éloïse", "reason": "not_found"},
                   {"state": "joined", "ssid": "Maison d'Éloïse", "address": "192.168.177.142", "port": 8000,
                    "hostname": "table-de-marc-antoine-eloise"}):
        setup_root.write_status(data, **status)
        box.show_join(f"http://{wifi.ADDRESS}:8000/", "1234")      # a wakeup: the screen reads the files
        box.flush()
    assert recorder.failures() == []
    assert any("192.168.177.142" in "".join(c.texts) for c in recorder.canvases)
