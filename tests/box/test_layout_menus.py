"""The layout check (hardware/layout.py) on every screen of the box's menu,
not only those a game's walk happens to open: the main menu with and
without a game, the game picker, each game's set-up and its name picker,
the language picker, the undo question, the phone seats, the New PIN
question, the phones' QR screen, a notice, a phone's claim and a message;
in English and French, with long accented names.  And the panel's own
states: dimmed (the same frame), asleep (a black one), a long-lived screen
moved round its orbit.
"""

from __future__ import annotations

import pytest

from companion import games
from companion.i18n import set_language
from hardware import draw as d
from hardware import panel_care as pc
from hardware.layout import problems
from hardware.testing import box_config
from hardware.ui import menus
from hardware.ui.app import App

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

LONG = ["Marc-Antoine", "Éloïse", "Zoé", "Ingrid", "Łukasz Øster-Ñúñez", "François", "Chloé", "Élodie"]
LANGUAGES = ["en", "fr"]


def app_for(session, language: str, game: str | None = "third-man") -> App:
    set_language(language)
    config = box_config(language=language, names=LONG)
    if game is not None:
        session.submit({"type": "new_game", "game": game, "players": LONG[:4]})
        session.update_table(lambda table: table.claims.update({1: "phone of Éloïse"}))
    app = App(session, config)
    app.join = ("http://companion.local:8000", "4821")
    app.refresh(None)
    app.claim_news = []
    return app


def frame(app) -> d.Canvas:
    c = d.Canvas()
    app.draw(c)
    return c


def every_row(app, layer) -> list[d.Canvas]:
    """The layer drawn with its cursor on each of its rows."""
    app.push(layer)
    out = []
    rows = layer.rows() if hasattr(layer, "rows") else [None]
    for i in range(len(rows)):
        if hasattr(layer, "cursor"):
            layer.cursor = i
        out.append(frame(app))
    app.pop()
    return out


def check(canvases, where: str) -> list[str]:
    found = []
    for c in canvases:
        for p in problems(c):
            found.append(f"{where}: {' | '.join(c.texts)}: {p}")
    return found


@pytest.fixture(autouse=True)
def english_after():
    yield
    set_language("en")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_menu_screen_keeps_the_layout_rules(session, language):
    app = app_for(session, language)
    found = check(every_row(app, menus.MainMenu(app)), "main menu")
    found += check(every_row(app, menus.GamePicker(app)), "game picker")
    for game_id in games.available():
        setup = menus.Setup(app, game_id)
        found += check(every_row(app, setup), f"set-up {game_id}")
        app.push(setup)
        found += check(every_row(app, menus.NamePicker(app, setup, 0)), f"names {game_id}")
        app.pop()
    found += check(every_row(app, menus.LanguagePicker(app)), "language")
    found += check(every_row(app, menus.UndoConfirm(app)), "undo")
    found += check(every_row(app, menus.ClaimsMenu(app)), "phone seats")
    found += check(every_row(app, menus.NewPinConfirm(app)), "new PIN")
    found += check(every_row(app, menus.JoinScreen(app)), "phones (QR)")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_menu_without_a_game_and_the_table_s_own_screens_keep_the_rules(session, language):
    app = app_for(session, language, game=None)
    found = check(every_row(app, menus.MainMenu(app)), "main menu, no game")
    found += check([frame(app)], "idle")
    app.show_message("Seat 2 released: that phone cannot read or enter anything for it.")
    found += check([frame(app)], "message")
    app.toast = None
    app.notices = [("The {button} button seems stuck: it is ignored until it is released.", {"button": "OK"})]
    found += check([frame(app)], "notice")
    app.notices = []
    app.claim_news = [(1, "phone of Marc-Antoine Ébrard")]
    found += check([frame(app)], "claim")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_new_pin_question_keeps_its_last_row_clear(session, language):
    """Its last line ("BACK: keep it") once had the "p" of "keep" on the
    panel's clear bottom row."""
    app = app_for(session, language)
    app.push(menus.NewPinConfirm(app))
    c = frame(app)
    assert problems(c) == []
    assert all(box[3] <= d.HEIGHT - d.MARGIN for box in (it["box"] for it in c.items if it["kind"] == "text"))


class FakeClock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_panel_s_states_keep_the_rules(make_box, session, language, monkeypatch):
    """Dimmed: the frame as drawn; asleep: black; a long-lived screen at
    each place of its orbit (the box's own frames, in both languages)."""
    from hardware import box as box_module

    drawn: list[d.Canvas] = []

    class Recording(d.Canvas):
        def __init__(self):
            super().__init__()
            drawn.append(self)
    monkeypatch.setattr(box_module, "Canvas", Recording)
    clock = FakeClock()
    box = make_box(box_config(language=language, panel_dim_s=pc.SHIFT_S * 5, panel_sleep_s=pc.SHIFT_S * 40),
                   clock=clock)
    box.show_join("http://companion.local:8000", "4821")
    box.flush()
    for game in (None, "scoreboard"):                   # the idle screen, then a game's board
        if game:
            session.submit({"type": "new_game", "game": game, "players": LONG[:4]})
            box.flush()
        for _ in range(len(pc.ORBIT)):
            clock.now += pc.SHIFT_S
            box.flush()
    assert box.care.state == pc.DIM
    clock.now += pc.SHIFT_S * 40
    box.flush()
    assert box.care.state == pc.ASLEEP and box.frame.image.getbbox() is None
    found = check(drawn, "panel states")
    assert not found, "\n".join(found[:8])
