"""Player names a table can tell apart (issue 21, point 5).

A name is read on a one-bit screen, on phones and in the league, by people
who cannot see code points.  So a name is **tidied** before anything keeps
it (:func:`tidy`): NFC (an accent typed as a combining mark is one
letter), invisible and format characters taken out (zero-width space and
joiners, the soft hyphen, the word joiner, the combining grapheme joiner,
the Hangul fillers, variation selectors, tags: Unicode's
Default_Ignorable_Code_Point and every format character, category Cf),
every kind of space made one plain space, and trimmed.  ``Ben\\u200b``
becomes ``Ben``; a name of only a Hangul filler becomes empty and is
refused as empty.

Two names are then the **same player** when their identity matches
(:func:`companion.stats.player_key`: case folded), and **look alike** when
their confusable skeletons match (:func:`looks`): Unicode's confusables
data (UTS #39, as shipped by the ``confusable_homoglyphs`` package) maps
the Cyrillic ``е`` of "Bеn" to the Latin ``e``, ``0`` to ``O``, ``rn`` and
``m`` to one form, and so on.  A name that looks like another player's at
the same table or on the roster without being the same player is refused
(:func:`refuse_lookalikes`) with a clear message.

What ``companion replay`` accepts does not change (the log contract is
older than this rule): the rule applies where names enter — a new game at
the table, the roster, the web's import and the hub.
"""

from __future__ import annotations

import threading
import unicodedata
from pathlib import Path
from collections.abc import Iterable

from .errors import InvalidActionError
from .i18n import N_

# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties) that are not
# already format characters (Cf): they draw nothing, or a blank.
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
    (0x2800, 0x2800),       # the braille blank: not ignorable, but a name of it looks empty
)


def invisible(ch: str) -> bool:
    """A character that draws nothing (or a blank) where names are shown."""
    code = ord(ch)
    if unicodedata.category(ch) == "Cf":
        return True
    return any(lo <= code <= hi for lo, hi in _IGNORABLE_RANGES)


def _pictograph(ch: str) -> bool:
    """An emoji-like symbol (or a skin-tone modifier): what the joiners and
    the emoji variation selector are for."""
    return unicodedata.category(ch) == "So" or 0x1F3FB <= ord(ch) <= 0x1F3FF


def _emoji_part(name: str, i: int, kept: list[str]) -> bool:
    """Whether the invisible ``name[i]`` belongs to an emoji sequence (a
    family "👩‍👩‍👧", "❤️", a subdivision flag's tags), where it draws a
    picture rather than hides a letter: kept."""
    ch, code = name[i], ord(name[i])
    before = kept[-1] if kept else ""
    after = name[i + 1] if i + 1 < len(name) else ""
    if code == 0x200D:                                   # zero-width joiner: between two pictographs
        return bool(before) and _pictograph(before) and bool(after) and _pictograph(after)
    if code in (0xFE0E, 0xFE0F):                          # text or emoji presentation of a symbol
        return bool(before) and _pictograph(before)
    if 0xE0020 <= code <= 0xE007F:                        # the tags of a subdivision flag
        return bool(before) and (ord(before) == 0x1F3F4 or 0xE0020 <= ord(before) <= 0xE007E)
    return False


def tidy(name: str) -> str:
    """NFC, invisible and format characters out (those inside an emoji
    sequence stay), spaces made one plain space, trimmed.  Control
    characters are left for the caller to refuse (companion/text.py): a
    message naming them helps more than a silent fix."""
    name = unicodedata.normalize("NFC", name)
    kept: list[str] = []
    for i, ch in enumerate(name):
        if invisible(ch) and not _emoji_part(name, i, kept):
            continue
        kept.append(" " if ch != " " and unicodedata.category(ch) == "Zs" else ch)
    # NFC again: a combining mark may now follow the letter it was kept from.
    text = unicodedata.normalize("NFC", "".join(kept))
    return " ".join(part for part in text.split(" ") if part)


# -- confusable skeletons ------------------------------------------------------------

_table: dict[str, str] | None = None
_table_lock = threading.Lock()


def _build(data: dict) -> dict[str, str]:
    """Each confusable character -> its prototype (the form every member of
    its group maps to), from the package's copy of Unicode's confusables.txt.
    The package keeps the pairs both ways; each group is a star around its
    prototype (a sequence such as ``rn`` is always the prototype; in a group
    of two single characters either serves, the smaller is taken)."""
    def bare(text: str) -> str:
        # The data wraps right-to-left letters in direction marks for display.
        return text.replace("\u200e", "").replace("\u200f", "")

    pairs: dict[str, set[str]] = {}
    for char, entries in data.items():
        pairs.setdefault(bare(char), set()).update(bare(e["c"]) for e in entries)
    table: dict[str, str] = {}
    for char, others in pairs.items():
        if len(char) != 1 or not others:
            continue
        if len(others) > 1:
            continue                    # the centre of its star: a prototype
        (other,) = others
        if len(other) > 1 or len(pairs.get(other, ())) > 1 or other < char:
            table[char] = other         # a source; its prototype
    return table


def _confusables_file() -> Path:
    """The package's ``confusables.json``, found without importing the
    package's loader module, which imports ``urllib.request`` (and with it
    http, email and ssl: ~0.1 s here, about 1 s on a Pi Zero 2 W) for a
    download function we never call."""
    import importlib.util

    spec = importlib.util.find_spec("confusable_homoglyphs")
    return Path(next(iter(spec.submodule_search_locations))) / "confusables.json"


def _confusables(source: Path) -> dict:
    import json

    with open(source, encoding="utf-8") as file:
        return json.load(file)


def _cached() -> dict[str, str]:
    """The table, kept in the companion's cache folder once built.  Unicode's
    data is 0.9 MB of JSON whose parse holds the interpreter for its whole
    length (~80 ms of CPU here, most of a second on a Pi Zero, seconds in an
    emulator): the box's serving loop and its buttons must not wait for it
    at every start, so only the first start after an install parses it; the
    kept table (90 kB) loads in a few milliseconds.  Keyed on the data file's
    size and time: a new version of the package builds it again."""
    import json

    from . import durable
    from .i18n import cache_dir

    source = _confusables_file()
    stat = source.stat()
    kept = cache_dir() / f"lookalikes-{stat.st_size}-{int(stat.st_mtime)}.json"
    try:
        with open(kept, encoding="utf-8") as file:
            table = json.load(file)
        if isinstance(table, dict):
            return table
    except (OSError, ValueError):
        pass
    table = _build(_confusables(source))
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        durable.write_text(kept, json.dumps(table, ensure_ascii=False))    # whole, even with two starts at once
    except OSError:
        pass                            # a read-only cache: built again next time
    return table


def _mapping() -> dict[str, str]:
    global _table
    if _table is None:
        with _table_lock:
            if _table is None:
                _table = _cached()
    return _table


def warm() -> None:
    """Build the skeleton table now, in the background (it takes a moment
    on a Pi Zero; the box's thread must never wait for it)."""
    if _table is None:
        threading.Thread(target=_mapping, name="names-warm", daemon=True).start()


def skeleton(text: str) -> str:
    """UTS #39's skeleton: NFD, each character by its prototype, NFD again
    (repeated until stable: a prototype may hold characters mapped too)."""
    table = _mapping()
    text = unicodedata.normalize("NFD", text)
    for _ in range(4):
        mapped = unicodedata.normalize("NFD", "".join(table.get(ch, ch) for ch in text))
        if mapped == text:
            break
        text = mapped
    return text


def looks(name: str) -> str:
    """What a name looks like, whatever its case and look-alike letters."""
    return skeleton(skeleton(tidy(name)).casefold())


def same_player(a: str, b: str) -> bool:
    from .stats import player_key

    return player_key(tidy(a)) == player_key(tidy(b))


def lookalike(name: str, others: Iterable[str]) -> str | None:
    """The first of ``others`` that looks like ``name`` without being the
    same player, or None."""
    seen = looks(name)
    for other in others:
        if not same_player(name, other) and looks(other) == seen:
            return other
    return None


def refuse_lookalikes(players: list[str], roster: Iterable[str] = ()) -> None:
    """Refuse (InvalidActionError) a table whose names the table could not
    tell apart: two that look alike, or one that looks like a roster
    player's without being them."""
    for seat, name in enumerate(players):
        seen = looks(name)
        other = next((o for o in players[:seat] if looks(o) == seen), None)     # "Ann" and "ann" too
        if other is not None:
            raise InvalidActionError(N_("'{name}' looks like '{other}', another player at this table: "
                                        "choose names the table can tell apart"), name=name, other=other)
    roster = list(roster)
    for name in players:
        if any(same_player(name, known) for known in roster):
            continue            # a roster player by name (even if an older entry looks like them)
        other = lookalike(name, roster)
        if other is not None:
            raise InvalidActionError(N_("'{name}' looks like '{other}', a player on the roster: "
                                        "pick {other} or choose a name the table can tell apart"),
                                     name=name, other=other)
