"""French typography, as French readers expect it, over the whole catalogue,
and the box's hint lines fitting the panel as written.

The rule (companion/locale/README.md): a no-break space, U+00A0, before
``:`` ``;`` ``!`` ``?`` and inside « » -- on the pages, in the API's
messages and on the box alike; never a plain space there (a line could
break before the colon, leaving it alone at the start of the next line),
never none ("Jetons: –"), and never the narrow U+202F (one choice, kept
everywhere).  Code quoted in a text stays as it is ("Content-Type: …",
"FIGHT?", a JSON example).

The box's hints ("OK : suite · BACK : menu") are drawn as written: each
fits the 128-pixel line with its spaces, in English and in French, and is
never squeezed ("OK:suite·BACK:retour").
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir

from companion.i18n import gettext
from test_i18n import catalogue

ROOT = Path(__file__).resolve().parents[2]
NBSP = "\u00a0"
# Code and names inside a French text, which keep their own spelling.
CODE = re.compile(r'FIGHT(?: MORE)?\?|SHA256:|Content-Type:|"[\w-]+":|\?[a-z_]+=|[a-z]+://|\d:\d\d')


def typography_problems(text: str) -> list[str]:
    """What ``text`` (a French text) does against the rule, as readable lines."""
    prose = CODE.sub(lambda m: "\u2060" * len(m.group()), text)       # code out, places kept
    found = []
    for m in re.finditer(r"[:;!?]", prose):
        before = prose[m.start() - 1] if m.start() else ""
        if before != NBSP:
            what = {" ": "a plain space", "\u202f": "a narrow no-break space"}.get(before, "no space")
            found.append(f"{what} before {m.group()!r} at {m.start()}")
    for m in re.finditer("«", prose):
        if prose[m.end():m.end() + 1] != NBSP:
            found.append(f"no no-break space after « at {m.start()}")
    for m in re.finditer("»", prose):
        if m.start() == 0 or prose[m.start() - 1] != NBSP:
            found.append(f"no no-break space before » at {m.start()}")
    if "\u202f" in prose:
        found.append("a narrow no-break space (U+202F): the catalogue uses U+00A0")
    return found


def test_the_typography_check_can_fail():
    assert typography_problems("Jetons: –")
    assert typography_problems("Code PIN de la table : 8963")          # a plain space breaks
    assert typography_problems("Vraiment annuler\u202f?")
    assert typography_problems("«\u00a0companion»") and typography_problems("«companion\u00a0»")
    assert not typography_problems("Jetons\u00a0: –")
    assert not typography_problems("Parties jouées\u00a0: 3 · «\u00a0{ssid}\u00a0»\u00a0!")
    assert not typography_problems("envoyez du JSON avec l’en-tête Content-Type: application/json")
    assert not typography_problems('comme {"mode": "fischer"}, à 12:30 sur http://box.local')


def test_every_french_text_has_french_typography():
    problems = []
    for message in catalogue("fr"):
        if not message.id or not message.string:
            continue
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        for text in strings:
            for problem in typography_problems(text):
                problems.append(f"{problem}: {text!r}")
    assert not problems, f"{len(problems)} French texts against the rule:\n" + "\n".join(problems[:40])


# -- the box's hint lines ---------------------------------------------------------------------

HINT = re.compile(r"\b(?:OK|BACK)\b[^:]{0,12}:")


def box_hints() -> list[str]:
    """Every text of the box that says what OK or BACK does ("OK: next · BACK: menu")."""
    found = set()
    for _file, _line, message, _comments, _ctx in extract_from_dir(
            str(ROOT / "hardware"), [("**.py", "python")], keywords={"_": None, "N_": None}):
        if isinstance(message, tuple):
            message = message[0]
        if message and HINT.search(message):
            found.add(message)
    return sorted(found)


HINTS = box_hints()


def test_the_box_has_hints_to_measure():
    assert len(HINTS) > 30 and "OK: next · BACK: menu" in HINTS


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_every_hint_of_the_box_fits_the_panel_as_written(lang):
    from hardware import draw as d
    from hardware.ui.base import HINT_FONT

    room = d.WIDTH - 2 * d.MARGIN
    wide = []
    for hint in HINTS:
        text = gettext(hint, lang)
        width = d.text_width(text, HINT_FONT)
        if width > room:
            wide.append(f"{text!r}: {width} px of {room}")
    assert not wide, f"{lang} hints wider than the panel:\n" + "\n".join(wide)
    assert d.text_width("OK\u00a0: valider · BACK\u00a0: retour", HINT_FONT) > room     # the check can fail


@pytest.mark.parametrize("text", [gettext("OK: next · BACK: back", "fr"), "OK\u00a0: valider · BACK\u00a0: retour"])
def test_a_hint_is_drawn_as_written(text):
    """No squeezing: the hint on the panel is the catalogue's text, spaces
    and all; one too wide (which the test above finds first) is cut as any
    text is, never rewritten without its spaces."""
    from hardware import draw as d
    from hardware.ui.base import hint_line

    c = d.Canvas()
    hint_line(c, text)
    drawn = [it["text"] for it in c.items if it["kind"] == "text"]
    assert len(drawn) == 1 and drawn[0].rstrip("\u2026") == text[:len(drawn[0].rstrip("\u2026"))], drawn
