"""French and English are both first-class: every text in both catalogues.

The texts are extracted from the code and the templates exactly as
``pybabel extract -F babel.cfg`` does; a text missing from either
catalogue, an empty French translation, or a translation whose ``{named}``
placeholders differ from the original fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from companion.i18n import LANGUAGES, LOCALE_DIR, gettext, normalise, translate_error

from box_support import record_cut_texts

ROOT = Path(__file__).resolve().parents[2]
KEYWORDS = {"_": None, "N_": None, "gettext": None}
METHODS = [
    ("companion/**.py", "python"), ("hardware/**.py", "python"), ("web/**.py", "python"),
    ("appliance/**.py", "python"),
    ("web/templates/**.html", "jinja2"), ("hub/templates/**.html", "jinja2"),
]
PLACEHOLDER = re.compile(r"\{(\w*)[^{}]*\}")


def extracted() -> dict[str, str]:
    """msgid -> where it was found."""
    found = {}
    for filename, lineno, message, _comments, _ctx in extract_from_dir(
            str(ROOT), METHODS, keywords=KEYWORDS, options_map={"web/templates/**.html": {"extensions": "jinja2.ext.do"}}):
        if isinstance(message, tuple):   # plural forms: check the singular
            message = message[0]
        if message:
            found.setdefault(message, f"{filename}:{lineno}")
    return found


def catalogue(lang: str):
    with (LOCALE_DIR / lang / "LC_MESSAGES" / "companion.po").open("rb") as fh:
        return read_po(fh, locale=lang)


TEXTS = extracted()


def test_there_are_texts_to_translate():
    assert len(TEXTS) > 100


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_text_is_in_the_catalogue(lang):
    cat = catalogue(lang)
    missing = [f"{msg!r} ({where})" for msg, where in TEXTS.items() if msg not in cat]
    assert not missing, f"{len(missing)} texts missing from {lang}: " + "; ".join(missing[:20])


def test_every_french_text_is_translated_with_the_same_placeholders():
    cat = catalogue("fr")
    problems = []
    for msg in TEXTS:
        entry = cat.get(msg)
        if entry is None:
            continue
        if not entry.string:
            problems.append(f"untranslated: {msg!r}")
        elif set(PLACEHOLDER.findall(msg)) != set(PLACEHOLDER.findall(entry.string)):
            problems.append(f"placeholders differ: {msg!r} -> {entry.string!r}")
        elif entry.fuzzy:
            problems.append(f"fuzzy: {msg!r}")
    assert not problems, "\n".join(problems[:30])


def test_french_texts_are_printable_on_one_line():
    """No control character, no line break: errors are one line.  The
    no-break space of French punctuation is no line break (the API keeps it,
    web/errors.py; tests/box/test_typography.py checks where it goes)."""
    cat = catalogue("fr")
    bad = [m.id for m in cat if m.id and m.string and not m.string.replace("\u00a0", " ").isprintable()]
    assert not bad, bad


def test_gettext_speaks_french_and_english():
    assert gettext("nothing to undo", "fr") != "nothing to undo"
    assert gettext("nothing to undo", "en") == "nothing to undo"


def test_a_rule_error_is_translated_at_the_boundary():
    from companion.errors import NothingToUndo

    assert translate_error(NothingToUndo(), "en") == "nothing to undo"
    assert translate_error(NothingToUndo(), "fr") == gettext("nothing to undo", "fr")


@pytest.mark.parametrize("given, lang", [("fr-FR", "fr"), ("fr_CA.UTF-8", "fr"), ("FR", "fr"), ("de", "en"),
                                         ("", "en"), (None, "en"), ("en-GB", "en")])
def test_language_codes(given, lang):
    assert normalise(given) == lang


# -- the command line: the replay contract in French ----------------------------------------

BAD_LOG = ('{"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}\n'
           '{"type": "bid", "seat": 2, "card": 4}\n')


def run_cli(companion_cmd, tmp_path, args, **env):
    import os
    import subprocess

    environ = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LANGUAGE", "COMPANION_LANG")}
    environ.update(env)
    return subprocess.run([*companion_cmd, *args], capture_output=True, text=True, encoding="utf-8",
                          env=environ, cwd=tmp_path, timeout=60)


@pytest.mark.parametrize("env, lang", [({"LANG": "fr_FR.UTF-8"}, "fr"), ({"LANG": "C.UTF-8"}, "en"),
                                       ({"LANG": "en_GB.UTF-8", "COMPANION_LANG": "fr"}, "fr"),
                                       ({"LANG": "fr_FR.UTF-8", "COMPANION_LANG": "en"}, "en")])
def test_replay_keeps_its_contract_in_every_language(companion_cmd, tmp_path, env, lang):
    """``line N:`` and the exit status never change; the words after the prefix
    follow COMPANION_LANG, else LANG."""
    (tmp_path / "bad.jsonl").write_text(BAD_LOG, encoding="utf-8")
    r = run_cli(companion_cmd, tmp_path, ["replay", "bad.jsonl"], **env)
    assert r.returncode == 2 and r.stdout == ""
    expected = gettext("{name} cannot bid yet: {lead} leads this bid and shows a card first", lang,
                       name="Chloé", lead="Ann")
    assert r.stderr == f"line 2: {expected}\n"
    if lang == "fr":
        assert expected.startswith("Chloé ne peut pas")


def test_replay_json_keys_do_not_change_with_the_language(companion_cmd, tmp_path):
    (tmp_path / "good.jsonl").write_text(BAD_LOG.splitlines()[0] + "\n", encoding="utf-8")
    french = run_cli(companion_cmd, tmp_path, ["replay", "good.jsonl"], LANG="fr_FR.UTF-8")
    english = run_cli(companion_cmd, tmp_path, ["replay", "good.jsonl"], LANG="C.UTF-8")
    assert french.returncode == english.returncode == 0
    assert french.stdout == english.stdout and '"players"' in french.stdout


# -- the phones: Accept-Language, the switch and its cookie -------------------------------------

@pytest.fixture
def web(tmp_path):
    from web_support import FakeBox, make_app, make_session

    session = make_session(tmp_path)
    app = make_app(session, mock=True, box=FakeBox(), url="http://192.168.1.20:8000/")
    yield app.test_client()
    app.extensions["companion"].close()
    session.store.close()


def html_lang(response) -> str:
    import re

    return re.search(r'<html lang="(\w+)">', response.get_data(as_text=True)).group(1)


def test_the_page_switch_sets_a_cookie_that_wins_over_the_browser(web):
    assert html_lang(web.get("/", headers={"Accept-Language": "en"})) == "en"
    switched = web.get("/?lang=fr", headers={"Accept-Language": "en"})
    assert html_lang(switched) == "fr"
    assert "lang=fr" in switched.headers["Set-Cookie"] and "Path=/" in switched.headers["Set-Cookie"]
    for path in ("/", "/seat", "/control", "/join", "/history", "/stats"):     # every page after it
        assert html_lang(web.get(path, headers={"Accept-Language": "en"})) == "fr", path
    # the API's errors too (the scripts also send ?lang=, which wins)
    r = web.post("/api/actions", json={"type": "undo"}, headers={"Accept-Language": "en"})
    assert r.json["error"] == gettext("this needs the table PIN (header X-Table-Pin) or a seat token (header X-Seat-Token)", "fr")
    assert html_lang(web.get("/?lang=en", headers={"Accept-Language": "fr"})) == "en"
    assert html_lang(web.get("/", headers={"Accept-Language": "fr"})) == "en"   # the new choice stuck


def test_an_api_lang_parameter_or_a_bad_cookie_sets_nothing(web):
    r = web.get("/api/state?lang=fr")
    assert "Set-Cookie" not in r.headers
    web.set_cookie("lang", "xx")
    assert html_lang(web.get("/", headers={"Accept-Language": "fr-FR,fr;q=0.9"})) == "fr"


def test_the_switch_is_on_every_page_and_keeps_the_other_parameters(web):
    import re

    for path in ("/", "/seat", "/control", "/join", "/history", "/stats"):
        html = web.get(path, headers={"Accept-Language": "fr"}).get_data(as_text=True)
        links = re.findall(r'<a href="([^"]*)" hreflang="(\w+)"[^>]*?( aria-current="true")?>(\w+)</a>', html)
        assert [(href, code, bool(current), label) for href, code, current, label in links] == [
            ("?lang=en", "en", False, "EN"), ("?lang=fr", "fr", True, "FR")], path
    html = web.get("/history?game=yenta&player=Zo%C3%AB").get_data(as_text=True)
    assert 'href="?game=yenta&amp;player=Zo%C3%AB&amp;lang=fr"' in html


def test_names_with_accents_reach_the_pages_as_they_are(web):
    from web_support import pin_headers

    names = ["Chloé", "François", "Zoë", "Łukasz"]
    r = web.post("/api/actions", json={"type": "new_game", "game": "third-man", "players": names},
                 headers=pin_headers())
    assert r.status_code == 200
    for path in ("/", "/seat", "/history"):
        page = web.get(path, headers={"Accept-Language": "fr"})
        assert page.mimetype == "text/html" and page.mimetype_params.get("charset", "utf-8").lower() == "utf-8"
        assert '<meta charset="utf-8">' in page.get_data(as_text=True)
        for name in names:
            assert name in page.get_data(as_text=True), (path, name)
    assert web.get("/api/state").get_json()["players"] == names


# -- the box: its language is a setting, switched from the menu -----------------------------------

def test_the_box_fonts_draw_every_letter_of_the_names():
    """É, ç, ë, Ł... each has its own glyph (Pillow's default font draws boxes)."""
    from PIL import Image, ImageDraw

    from hardware import draw as d

    def ink(char, font):
        image = Image.new("1", (40, 40))
        ImageDraw.Draw(image).text((5, 5), char, font=font, fill=1)
        return image.tobytes()

    for font in (d.SMALL, d.BODY, d.STRONG, d.TITLE, d.BIG, d.HUGE):
        missing = ink("\uffff", font)          # not a character: the font's "no glyph" box
        for char in "éèêçëœàâîôûùÉÈÇÀŁłŒŸÿ’«»\u00a0":
            if char != "\u00a0":
                assert ink(char, font) != missing, (char, font.size)
        # and the plain letter is not what is drawn for the accented one
        assert ink("é", font) != ink("e", font) and ink("Ł", font) != ink("L", font)


def test_save_language_keeps_the_rest_of_the_settings_file(tmp_path):
    import tomllib

    from hardware.ui.menus import save_language

    file = tmp_path / "companion.toml"
    assert save_language(file, "fr") and tomllib.loads(file.read_text()) == {"language": "fr"}
    file.write_text('# my table\npin = "1234"\nlanguage = "en"  # was\nnames = ["Zoë", "Łukasz"]\n\n'
                    '[display]\nrotate = 2\n', encoding="utf-8")
    assert save_language(file, "fr")
    text = file.read_text(encoding="utf-8")
    assert text.startswith("# my table\n") and "rotate = 2" in text
    assert tomllib.loads(text) == {"pin": "1234", "language": "fr", "names": ["Zoë", "Łukasz"],
                                   "display": {"rotate": 2}}
    file.write_text('[display]\nrotate = 2\n')          # no top-level language yet: added on top
    assert save_language(file, "en")
    assert tomllib.loads(file.read_text()) == {"language": "en", "display": {"rotate": 2}}
    file.write_text("this is = = not TOML\n")
    assert not save_language(file, "fr")
    assert file.read_text() == "this is = = not TOML\n"        # a broken file is left alone


def test_the_box_switches_to_french_from_its_menu_and_remembers_it(session, tmp_path):
    from gpiozero.pins.mock import MockFactory

    from companion import config as cfg
    from hardware import Box
    from hardware.testing import box_config

    factory = MockFactory()
    config = box_config()
    box = Box(session, config, mock=True, pin_factory=factory)
    box.start()
    try:
        assert "Game companion" in box.frame.texts
        box.press("ok")                                   # the menu: New game, Phones, Speak, Language
        box.press("up")                                   # wraps to the last row: Language
        assert "Language" in box.frame.texts and "English" in box.frame.texts
        box.press("ok")
        assert box.frame.texts[0] == "Language"
        box.press("down")
        box.press("ok")                                   # Français
        assert box.frame.texts[0] == "Menu"
        # Back on the menu's last row (three rows show): its label now French.
        assert gettext("Language", "fr") in box.frame.texts and "Français" in box.frame.texts
        assert gettext("Language", "fr") != "Language"
        box.press("back")
        assert gettext("Game companion", "fr") in box.frame.texts
        assert config["language"] == "fr"
        assert cfg.load(session.store.dir)["language"] == "fr"        # the next start speaks French
    finally:
        box.close()
        factory.reset()
    assert gettext("nothing to undo") == "nothing to undo"           # the test's own context is untouched


STAGE2 = "stage 2 of issue 19: in the pixel font this game's own screens cut French texts ({})"


@pytest.mark.parametrize("game", ["third-man", "costly-tricks", "fight", "sloppy-seconds",
                                  "yenta",
                                  "diabolo",
                                  "scoreboard"])
def test_french_box_screens_fit_the_oled(game, tmp_path, monkeypatch):
    """A seeded random walk over one game's screens in French: no text is cut
    short or runs off the 128x64 panel (names are short here, as in English
    every screen fits them)."""
    import contextvars
    import random

    from companion import fight_solver, games
    from companion.hints import HintWorker
    from companion.i18n import set_language
    from companion.session import TableSession
    from companion.store import Store
    from hardware import draw as d
    from hardware.testing import box_config
    from hardware.ui import menus
    from hardware.ui.app import App

    cut, overflow = record_cut_texts(monkeypatch), set()
    text = d.Canvas.text

    def recording_text(self, x, y, s, font=d.BODY, fill=d.ON, anchor="la"):
        if s:
            w = d.text_width(s, font)
            left = x if anchor[0] == "l" else x - w if anchor[0] == "r" else x - w / 2
            if left < -1 or left + w > d.WIDTH + 1:
                overflow.add(s)
        return text(self, x, y, s, font, fill, anchor)

    monkeypatch.setattr(d.Canvas, "text", recording_text)
    monkeypatch.setattr(menus, "switch_language", lambda app, language: None)   # stay in French
    monkeypatch.setattr(fight_solver, "COALITION_BUDGET", 500)                    # quick hints
    monkeypatch.setattr(fight_solver, "HINT_BUDGET", 5_000)

    def walk():
        set_language("fr")
        store = Store(tmp_path / "data")
        session = TableSession(store)
        now = [0.0]
        app = App(session, box_config(language="fr", names=["Al", "Bo", "Cy", "Di", "Ed", "Flo"]),
                  clock=lambda: now[0])
        changes = []
        session.subscribe(changes.append)
        app.join = ("http://192.168.1.20:8000/", "4821")
        app.hints = HintWorker(process=False)     # the quick budgets above apply on a thread
        app.refresh(None)
        rng = random.Random(game)

        def step(key, hold=False):
            (app.hold if hold else app.key)(key)
            assert app.hints.wait_idle(30)        # a hint asked is answered before the clock moves
            for t in (0.0, rng.choice([0.1, 5.0])):
                now[0] += t
                app.due(now[0])
                while changes:
                    app.refresh(changes.pop(0))
            app.draw(d.Canvas())

        for key in ["ok", "ok"] + ["down"] * games.available().index(game) + ["ok", "ok"]:
            step(key)
        assert app.public["game"] == game
        for _ in range(250):
            r = rng.random()
            key = "ok" if r < 0.45 else "up" if r < 0.65 else "down" if r < 0.85 else "back"
            step(key, hold=key == "back" and rng.random() < 0.1)
        app.hints.close()
        store.close()

    contextvars.copy_context().run(walk)
    assert not cut, f"French texts cut short on the OLED: {sorted(cut)}"
    assert not overflow, f"French texts off the OLED: {sorted(overflow)}"
