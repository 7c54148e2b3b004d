"""The panel's QR code to a finished game's page (Menu → Game page): offered
once the game at the table is over, read back from the panel's own pixels
by zbar, drawn clean in English and French."""

from __future__ import annotations

import io
import shutil
import subprocess

import pytest

from hardware import draw as d
from hardware.layout import problems
from hardware.testing import box_config
from hardware.ui.game_page import GamePageScreen
from hardware.ui.menus import MainMenu

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

ZBAR = shutil.which("zbarimg")
PLAYERS = ["Marc-Antoine", "Éloïse", "Zoë"]
FINISHED = [{"type": "new_game", "game": "scoreboard", "players": PLAYERS, "options": {"target": 10}},
            {"type": "add", "seat": 1, "points": 12}]


def decode(png: bytes, scale: int = 4) -> list[str]:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    image = image.resize((image.width * scale, image.height * scale), Image.NEAREST)
    buf = io.BytesIO()
    image.save(buf, "PNG")
    res = subprocess.run([ZBAR, "--raw", "-q", "-Sdisable", "-Sqrcode.enable", "-"], input=buf.getvalue(),
                         capture_output=True, timeout=60)
    return [line for line in res.stdout.decode("utf-8").splitlines() if line]


def open_game_page(box) -> bool:
    """BACK opens the menu; DOWN to "Game page", OK.  False if the menu has no such row."""
    box.press("back")
    box.flush()
    labels = [label for label, _right in MainMenu(box.app).rows()]
    wanted = [i for i, label in enumerate(labels) if label.startswith(("Game page", "Page de la partie"))]
    if not wanted:
        box.press("back")
        return False
    for _ in range(wanted[0]):
        box.press("down")
    box.press("ok")
    box.flush()
    return True


def frame_problems(box) -> list[str]:
    c = d.Canvas()                   # the screen's frame again, on a recording canvas
    box.app.layers[-1].draw(c)
    return problems(c)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_finished_games_page_is_one_scan_away(make_box, session, language, tmp_path):
    for action in FINISHED:
        session.submit(action)
    box = make_box(box_config(bounce_ms=1, language=language))
    box.show_join("http://192.168.1.20:8000/", "1234")
    box.flush()
    assert open_game_page(box)
    assert isinstance(box.app.layers[-1], GamePageScreen)
    assert frame_problems(box) == [], box.frame.texts
    from companion.i18n import gettext
    said = gettext("BG Stats: scan for this game's page", language)
    assert " ".join(box.frame.texts[1:]) == said, "the whole sentence, none of it cut"
    (tmp_path / f"game_page_{language}.png").write_bytes(box.frame_png(4))
    assert not box.frame.private              # the page is public to read: the mirror shows it too
    if ZBAR is not None:
        assert decode(box.frame_png(1)) == [f"http://192.168.1.20:8000/history/{session.game_id}"]
    box.press("ok")
    box.flush()
    assert isinstance(box.app.layers[-1], MainMenu)      # back to the menu it came from


@pytest.mark.skipif(ZBAR is None, reason="zbar-tools (zbarimg) is not installed")
def test_a_long_host_name_still_scans_or_is_written_out(make_box, session):
    for action in FINISHED:
        session.submit(action)
    box = make_box(box_config(bounce_ms=1))
    for url in ("http://companion-club.local:8000/", "http://table-of-marc-antoine-and-eloise.local:8000/"):
        box.show_join(url, "1234")
        box.flush()
        assert open_game_page(box)
        assert frame_problems(box) == [], box.frame.texts
        found = decode(box.frame_png(1))
        page = f"{url}history/{session.game_id}"
        if "companion-club" in url:          # level L still holds it at 2 px a module
            assert found == [page]
        else:                                # too long for any code that scans: written out whole
            assert found == [] and "".join(box.frame.texts[1:]) == page.split("//", 1)[1]
        for _ in range(2):                   # the screen, then the menu
            box.press("back")
        box.flush()


def test_an_unfinished_game_or_no_web_page_offers_no_game_page(make_box, session):
    session.submit(FINISHED[0])
    box = make_box(box_config(bounce_ms=1))
    box.show_join("http://192.168.1.20:8000/", "1234")
    box.flush()
    assert not open_game_page(box)
    session.submit(FINISHED[1])
    box.flush()
    assert open_game_page(box)
    for _ in range(2):
        box.press("back")
    box.flush()
    box.app.join = None                      # no web page: nothing to scan
    assert not open_game_page(box)
