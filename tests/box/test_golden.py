"""Golden images of the box's main screens, and the glyph checks behind them.

Each screen is reached through the mock box's buttons (or a phone's action
through the session, as a table would) and its frame is compared pixel for
pixel with ``tests/box/golden/<name>.png`` (128x64, one bit).  The names are
chosen to carry the letters a table brings (É, Ł, Ø, ß, ñ, Ç) and a long name.

After a deliberate change of a screen, regenerate the images with

    COMPANION_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/box/test_golden.py

look at every PNG it rewrote (``git diff --stat tests/box/golden``; the contact
sheet ``test-artifacts/golden/sheet.png`` shows them all, 4x) and commit them.
A failing comparison leaves ``<name>.actual.png`` and ``<name>.diff.png`` in
``test-artifacts/golden/``.

The images must not depend on the system: ``hardware.draw`` picks Pillow's
basic layout engine itself, and one test runs every comparison again in a
process where Pillow believes raqm is missing (a Pi without libfribidi).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageFont

from companion.games.third_man import score_bid
from hardware import draw
from hardware.testing import box_config

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

GOLDEN = Path(__file__).with_name("golden")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "golden"
UPDATE = os.environ.get("COMPANION_UPDATE_GOLDEN") == "1"

# Four seats of Third Man, and the table's list of names (a long one last).
PLAYERS = ["Élodie", "Łukasz", "Søren", "Ñuño"]
NAMES = ["Ann", "Ben", "Dan", "Zoë", "Élodie", "Łukasz", "Søren", "Ñuño", "Çağla", "Straße",
         "Maximilian Ølstrup-Nuñez"]


def check_golden(image: Image.Image, name: str) -> None:
    path = GOLDEN / f"{name}.png"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        image.convert("1").save(path, optimize=True)
        _sheet_add(name, image)
        return
    assert path.exists(), f"no golden image {path}: run with COMPANION_UPDATE_GOLDEN=1, inspect it, commit it"
    expected = Image.open(path).convert("L")
    diff = ImageChops.difference(image.convert("L"), expected)
    region = diff.getbbox()
    if region is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        image.resize((512, 256), Image.NEAREST).save(ARTIFACTS / f"{name}.actual.png")
        diff.resize((512, 256), Image.NEAREST).save(ARTIFACTS / f"{name}.diff.png")
        pytest.fail(f"screen {name!r} differs from {path.name} in {region}; see {ARTIFACTS}/{name}.actual.png")


def _sheet_add(name: str, image: Image.Image) -> None:
    """Add a regenerated image to the contact sheet (for a quick look)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    sheet_path = ARTIFACTS / "sheet.png"
    big = image.convert("L").resize((512, 256), Image.NEAREST)
    old = Image.open(sheet_path) if sheet_path.exists() else Image.new("L", (512, 0))
    sheet = Image.new("L", (512, old.height + 264), 90)
    sheet.paste(old, (0, 0))
    sheet.paste(big, (0, old.height))
    sheet.save(sheet_path)


def drawn(box) -> str:
    return " | ".join(box.frame.texts)


def press_until(box, key: str, done, limit: int = 12) -> None:
    for _ in range(limit):
        if done():
            return
        box.press(key)
    assert done(), f"not reached after {limit} × {key}: {drawn(box)}"


def round_ending_bid(p: dict) -> list[int]:
    """Cards (seat order) that push some score furthest: rounds end in few bids."""
    best = None
    for cards in itertools.product(*p["hands"]):
        points = score_bid(cards)
        if points is not None:
            reach = max(abs(s + g) for s, g in zip(p["scores"], points))
            if best is None or reach > best[0]:
                best = (reach, list(cards))
    return best[1]


# -- the screens ------------------------------------------------------------------------------

def test_idle_and_menu(make_box):
    box = make_box(box_config(names=NAMES))
    box.show_join("http://192.168.1.20:8000/", "4821")
    box.flush()
    check_golden(box.frame.image, "idle")
    box.press("ok")
    check_golden(box.frame.image, "menu")


def test_name_list_with_accented_names(make_box):
    box = make_box(box_config(names=NAMES))
    box.press("ok")                                     # the menu
    press_until(box, "down", lambda: box.app.layers[-1].rows()[box.app.layers[-1].cursor][0] == "New game")
    box.press("ok")                                     # the game picker: the first game
    box.press("ok")                                     # its set-up
    setup = box.app.layers[-1]
    press_until(box, "down", lambda: setup.rows()[setup.cursor][0].startswith("1."))
    box.press("ok")                                     # seat 1's names
    # Three rows show (the grid's pitch): on Łukasz, the row above and the one below.
    press_until(box, "down", lambda: box.app.layers[-1].rows()[box.app.layers[-1].cursor][0] == "Łukasz")
    assert "Élodie" in drawn(box) and "Łukasz" in drawn(box) and "Søren" in drawn(box)
    check_golden(box.frame.image, "names")
    press_until(box, "up", lambda: box.app.layers[-1].rows()[box.app.layers[-1].cursor][0] == NAMES[-1])
    check_golden(box.frame.image, "names_long")


def test_third_man_screens(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    for seat, card in [(0, 3), (1, 1), (2, 9), (3, 2)]:
        session.submit({"type": "bid", "seat": seat, "card": card})
    box = make_box(box_config(names=NAMES))
    check_golden(box.frame.image, "third_man_track")
    box.press("ok")                                     # the lead shows a card
    box.press("up")
    check_golden(box.frame.image, "third_man_lead")
    box.press("ok")
    check_golden(box.frame.image, "third_man_pass")
    assert not box.frame.private
    # The round's last bid, entered on phones: the box reveals it, then the round's end.
    p = session.public()
    cards = round_ending_bid(p)
    for step in range(1, 4):
        seat = (p["lead"] + step) % 4
        session.submit({"type": "bid", "seat": seat, "card": cards[seat]})
    p = session.public()
    while not p["rounds"]:                              # more bids until the round is over
        box.flush()
        cards = round_ending_bid(p)
        for step in range(4):
            seat = (p["lead"] + step) % 4
            session.submit({"type": "bid", "seat": seat, "card": cards[seat]})
        p = session.public()
    box.flush()
    assert "Revealed!" in drawn(box), drawn(box)
    check_golden(box.frame.image, "third_man_reveal")
    box.press("ok")
    assert "Round 1 over" in drawn(box), drawn(box)
    check_golden(box.frame.image, "third_man_round_over")


# -- glyphs: spacing and accents ----------------------------------------------------------------

GLYPH_NAMES = NAMES + ["Seat 4", "FIGHT?", "Ærøskøbing", "Šárka Ďurišová", "Ĺudovít Ŕehák", "ÉÈÊËÀÂÅÇÑÖØÜŁ",
                       "Grzegorz Brzęczyszczykiewicz"[:24]]


def widest_gap(image: Image.Image) -> int:
    """The widest run of blank columns between the first and the last inked one."""
    px = image.load()
    inked = [x for x in range(image.width) if any(px[x, y] for y in range(image.height))]
    return max((b - a - 1 for a, b in zip(inked, inked[1:])), default=0)


def word_gaps(word: str, font, layout_font=None) -> tuple[int, int]:
    """(widest gap of the word as the box draws it, widest gap of its letters
    drawn one by one at the font's own whole-pixel advances)."""
    whole = draw.Canvas()
    if layout_font is None:
        whole.text(2, 20, word, font, anchor="ls")
    else:                                   # another layout engine, for the counter-test
        whole.draw.text((2, 20), word, font=layout_font, fill=draw.ON, anchor="ls")
    pieces = draw.Canvas()
    x = 2
    for ch in word:
        pieces.text(x, 20, ch, font, anchor="ls")
        x += draw.text_width(ch, font)
    return widest_gap(whole.image), widest_gap(pieces.image)


@pytest.mark.parametrize("font_name", sorted(draw.ALL_FONTS))
def test_no_gap_opens_inside_a_word(font_name):
    """No blank gap inside a word is wider than its letters leave when each
    sits at the font's own (hinted, whole-pixel) advance.  Under raqm's
    fractional positions this fails ("Se at", "FI GHT?")."""
    font = draw.ALL_FONTS[font_name]
    for word in sorted({w for name in GLYPH_NAMES for w in name.split()}):
        drawn_gap, own_gap = word_gaps(word, font)
        assert drawn_gap <= own_gap, f"{font_name}: {word!r} has a {drawn_gap}-px gap (its letters leave {own_gap})"
        assert abs(draw.text_width(word, font) - sum(draw.text_width(ch, font) for ch in word)) <= 1


def test_the_raqm_layout_would_fail_that_test():
    """The check above can fail: laid out by Pillow itself (Terminus's fixed
    6-px cells, whichever engine), narrow letters open gaps inside words
    ("F I GHT?"); the box's own layout gives each letter its ink and one
    clear column."""
    bad = []
    for font in (draw.SMALL, draw.STRONG):
        pillow = draw._font(draw.REGULAR if font is draw.SMALL else draw.BOLD, font.size)
        bad += [(w, font.size) for w in ("Seat", "FIGHT?", "François", "Chloé", "Łukasz", "Round")
                if word_gaps(w, font, pillow)[0] > word_gaps(w, font)[1]]
    assert len(bad) >= 2, bad


def test_every_accent_is_whole_and_inside_its_row():
    """In a list row (12 px, as the menus and name lists draw them), the
    letters stay inside their row: nothing reaches the row above (a selected
    row's bar starts one line higher, so an accent is never a notch open to
    the dark above it), and each accented letter keeps all its ink."""
    row_h, y = 12, 12
    for font in (draw.BODY, draw.STRONG):
        for name in GLYPH_NAMES:
            plain = draw.Canvas()
            plain.row(y, name, False, height=row_h, font=font)
            above = plain.image.crop((0, 0, draw.WIDTH, y)).getbbox()
            assert above is None, f"{name!r} in {font.getname()} reaches the row above: {above}"
            assert plain.image.crop((0, y + row_h, draw.WIDTH, draw.HEIGHT)).getbbox() is None
            selected = draw.Canvas()
            selected.row(y, name, True, height=row_h, font=font)
            assert selected.image.crop((0, 0, draw.WIDTH, y - 1)).getbbox() is None
            bar_top = selected.image.crop((0, y - 1, draw.WIDTH, y))
            assert bar_top.getextrema() == (255, 255), f"{name!r}: the selected bar's top line is not whole"
        for ch in "ÉÈÊËÅÇÑÖØÜŁ":
            c = draw.Canvas()
            c.row(y, ch, False, height=row_h, font=font)
            alone = draw.Canvas()
            alone.text(10, 40, ch, font, anchor="ls")
            lit = c.image.histogram()[255]
            assert lit == alone.image.histogram()[255] and lit > 0, f"{ch!r} lost ink in a row"


def test_accent_of_a_capital_is_drawn_whole():
    """Pillow's getbbox puts the top of "É" a row below its accent's first
    pixel; the box's glyph masks keep that row (the accent was a dot)."""
    from PIL import ImageDraw

    for font in draw.ALL_FONTS.values():
        for ch in "ÉÅŁ":
            reference = Image.new("1", (60, 60))
            ref_draw = ImageDraw.Draw(reference)
            ref_draw.fontmode = "1"
            ref_draw.text((10, 40), ch, font=font, fill=255, anchor="ls")
            c = draw.Canvas()
            c.text(10, 40, ch, font, anchor="ls")
            # The same ink, whole (the box may place the glyph a column left: its ink, not its cell).
            mine, theirs = c.image.crop((0, 0, 60, 60)), reference
            assert mine.crop(mine.getbbox()).tobytes() == theirs.crop(theirs.getbbox()).tobytes(), (ch, font.size)
            assert mine.getbbox()[1] == theirs.getbbox()[1], (ch, font.size)       # the accent's row kept


# -- the same images without raqm -----------------------------------------------------------------

HIDE_RAQM = """
import sys, pytest
from PIL import ImageFont, features
ImageFont.core.HAVE_RAQM = False            # as on a Pi without libfribidi0
assert ImageFont.truetype(sys.argv[1], 12).layout_engine == ImageFont.Layout.BASIC
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-k", "not without_raqm and not raqm_layout", sys.argv[2]]))
"""


@pytest.mark.skipif(UPDATE, reason="updating the images")
def test_golden_images_are_the_same_without_raqm():
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", HIDE_RAQM, str(draw.REGULAR), str(Path(__file__))],
                            cwd=root, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
