"""Diabolo's usual colour names: an id in the log, a word on every screen.

A Diabolo log's ``color`` is any name the table chooses (docs/replay.md:
1 to 24 characters, compared exactly).  The usual five are offered by the
box and the phones; a phone stores one as its *id*, the English name
("red"), whatever its language, and every screen says a stored name in its
own language ("rouge" on a French phone).  Logs written before stored the
word of the language of whoever entered it ("rouge" from a French box): a
usual name in *any* language maps back to its id, so those read right too,
and a name the table typed itself ("turquoise") is shown as it was typed.

The log format does not change: an id is an ordinary colour name.
"""

from __future__ import annotations

from functools import lru_cache

from .i18n import LANGUAGES, N_, gettext

# The box's usual names (hardware/ui/diabolo.py DEFAULT_COLOURS), in its order.
USUAL = (N_("red"), N_("blue"), N_("green"), N_("yellow"), N_("purple"))


def _key(name: str) -> str:
    return " ".join(str(name).split()).casefold()


@lru_cache(maxsize=1)
def names_to_ids() -> dict[str, str]:
    """Every usual name in every language (folded case) -> its id."""
    out: dict[str, str] = {}
    for colour in USUAL:
        for language in LANGUAGES:
            out.setdefault(_key(gettext(colour, language)), colour)
    return out


def colour_id(name: str) -> str | None:
    """The id of a usual colour named in any language, or None."""
    return names_to_ids().get(_key(name)) if isinstance(name, str) else None


def colour_label(name: str, language: str | None = None) -> str:
    """How a stored colour reads in ``language``: a usual one in that language, any other as stored."""
    found = colour_id(name)
    return gettext(found, language) if found else name
