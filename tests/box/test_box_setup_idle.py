"""A fresh data folder on a box with no Wi-Fi of its own (the laptop demo,
``companion run --mock --data EMPTY``; a box on a cable): set-up mode, as
appliance/setup.py defines it, shows on the panel as on a fresh box -- with
no game going on, the idle screen is "Scan to set up" with the Setup
page's QR code and the PIN (not on the mirror).  Nothing pops over a game
there, and a folder that was set up shows the ordinary idle screen."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)
from hardware.testing import box_config

ZBAR = shutil.which("zbarimg")
URL = "http://127.0.0.1:8000/"


def fresh_box(make_box, tmp_path, language="en", **files):
    data = tmp_path / "setup-data"
    data.mkdir()
    for name, text in files.items():
        (data / name).write_text(text)
    box = make_box(box_config(data_dir=str(data), language=language))
    box.show_join(URL, "4821")
    box.flush()
    return box, data


def decode(png: bytes) -> list[str]:
    out = subprocess.run([ZBAR, "--raw", "-q", "-"], input=png, capture_output=True, check=False)
    return out.stdout.decode("utf-8", "replace").split()


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_fresh_folder_shows_set_up_mode_on_the_idle_screen(make_box, tmp_path, language):
    from hardware import draw as d
    from hardware.layout import problems

    box, _data = fresh_box(make_box, tmp_path, language)
    texts = box.frame.texts
    assert ("Scan to set up" if language == "en" else "Scanner pour configurer") in " ".join(texts)
    assert "4821" in texts and "4821" not in box.mirror.texts, "the PIN, never on the mirror"
    assert not box.app.layers, "no layer over anything: the idle screen itself"
    canvas = d.Canvas()
    box.app.draw(canvas)
    assert problems(canvas) == []
    if ZBAR:
        assert decode(box.frame_png(4)) == [URL + "setup"]
    box.press("ok")                                   # OK: the menu, as on the idle screen
    assert box.app.layers, "the menu"


def test_a_folder_set_up_shows_the_ordinary_idle_screen_and_a_game_is_never_covered(make_box, tmp_path, session):
    box, data = fresh_box(make_box, tmp_path, **{"companion.toml": 'name = "Marc-Antoine"\n'})
    assert "Scan to set up" not in " ".join(box.frame.texts)
    assert "Game companion" in box.frame.texts
    (data / "companion.toml").unlink()                # set-up mode again (a fresh folder)
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Marc-Antoine", "Éloïse"]})
    box.flush()
    assert "Scan to set up" not in " ".join(box.frame.texts) and not box.app.layers
    assert "Éloïse" in box.frame.texts, "the game's own screen"
