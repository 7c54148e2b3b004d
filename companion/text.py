"""Text that came from someone else, made safe to keep and to print.

Player names and seat labels are shown on phones, in the operator's
terminal and on the box's screen.  A control character there can rewrite a
terminal's title or clear its screen (``ESC ]0;...``), and a bidirectional
override (U+202E) makes "Ann" read as something else on every screen, so
the web refuses them in names and labels (:func:`unsafe_char`), and the
command line shows any that an older log still holds escaped
(:func:`visible`).  What ``companion replay`` accepts does not change: the
log contract is older than this rule.
"""

from __future__ import annotations

import unicodedata

# Format characters that reorder or hide text: the bidirectional embeddings,
# overrides and isolates, the directional marks, the line and paragraph
# separators (a line break a terminal does not expect) and the byte-order mark.
_BIDI_AND_FORMAT = frozenset(
    [0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0xFEFF]
    + list(range(0x202A, 0x202F)) + list(range(0x2066, 0x2070)))


def is_unsafe(ch: str) -> bool:
    """A control character (C0, DEL, C1), a lone surrogate, or a format
    character that reorders or hides text."""
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F or code in _BIDI_AND_FORMAT:
        return True
    return unicodedata.category(ch) == "Cs"


def unsafe_char(text: str) -> str | None:
    """The first unsafe character of ``text`` as ``U+XXXX``, or None."""
    for ch in text:
        if is_unsafe(ch):
            return f"U+{ord(ch):04X}"
    return None


def visible(text: str, keep: str = "") -> str:
    """``text`` with every unsafe character (except those in ``keep``) shown
    as a JSON-style escape (``\\u202e``): still readable, never obeyed by a
    terminal.  Inside a JSON string the escape means the same character."""
    if not any(is_unsafe(ch) and ch not in keep for ch in text):
        return text
    return "".join(f"\\u{ord(ch):04x}" if is_unsafe(ch) and ch not in keep else ch for ch in text)
