"""The one translation function of the companion.

Every user-facing text goes through :func:`gettext` (aliased ``_``) or, for
messages that must be translated later in another language than the one
active now, is marked with :func:`N_` and translated at the boundary.

Catalogues are standard gettext ``.po`` files under ``companion/locale``;
they are compiled with Babel at first use, so the repository and the wheel
need no build step.  English is the source language.  Compiling is ~30 ms
here (importing Babel, parsing the ``.po``), ~0.3 s on a Pi Zero, at every
start of a French box: the compiled catalogue is kept in the user's cache
(:func:`cache_dir`), named after the ``.po``'s checksum, so a changed ``.po``
is compiled again and a cache that cannot be written only costs the time.
"""

from __future__ import annotations

import contextvars
import functools
import gettext as _gettext
import io
import os
import zlib
from pathlib import Path

LANGUAGES = ("en", "fr")
DEFAULT_LANGUAGE = "en"
LOCALE_DIR = Path(__file__).with_name("locale")
DOMAIN = "companion"

_current = contextvars.ContextVar("companion_language", default=DEFAULT_LANGUAGE)


def N_(message: str) -> str:
    """Mark ``message`` for extraction without translating it now."""
    return message


@functools.lru_cache(maxsize=None)
def translations(language: str) -> _gettext.NullTranslations:
    """The gettext catalogue of ``language`` (a NullTranslations for English)."""
    po = LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    if language == DEFAULT_LANGUAGE or not po.exists():
        return _gettext.NullTranslations()
    source = po.read_bytes()
    cached = cache_dir() / f"{DOMAIN}-{language}-{zlib.crc32(source):08x}-{len(source)}.mo"
    try:
        return _gettext.GNUTranslations(io.BytesIO(cached.read_bytes()))
    except (OSError, ValueError):       # not there yet, unreadable, or torn: compile it
        pass
    compiled = _compile(source, language)
    try:
        from . import durable

        cached.parent.mkdir(parents=True, exist_ok=True)
        durable.write(cached, compiled)     # whole or not at all, even with two starts at once
    except OSError:
        pass                            # a read-only home: compiled at each start, as before
    return _gettext.GNUTranslations(io.BytesIO(compiled))


def cache_dir() -> Path:
    """Where compiled catalogues are kept: systemd's ``CACHE_DIRECTORY``,
    else ``$XDG_CACHE_HOME/companion``, else ``~/.cache/companion`` (the
    service user's home is its state folder, see systemd/install.sh)."""
    if os.environ.get("CACHE_DIRECTORY"):
        return Path(os.environ["CACHE_DIRECTORY"].split(":")[0])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "companion"


def _compile(source: bytes, language: str) -> bytes:
    """The ``.mo`` of a ``.po`` (Babel, imported only here)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    catalog = read_po(io.BytesIO(source), locale=language)
    buf = io.BytesIO()
    write_mo(buf, catalog)
    return buf.getvalue()


def normalise(language: str | None) -> str:
    """Map 'fr-FR', 'fr_CA', 'FR' ... to a supported language code."""
    if not language:
        return DEFAULT_LANGUAGE
    code = language.replace("_", "-").split("-")[0].strip().lower()
    return code if code in LANGUAGES else DEFAULT_LANGUAGE


def set_language(language: str | None):
    """Make ``language`` current for this thread/context; returns a reset token."""
    return _current.set(normalise(language))


def current_language() -> str:
    return _current.get()


def gettext(message: str, language: str | None = None, **params) -> str:
    """Translate ``message`` into ``language`` (default: the current one) and
    fill its ``{named}`` parameters."""
    text = translations(normalise(language) if language else _current.get()).gettext(message)
    if params:
        try:
            return text.format(**params)
        except (KeyError, IndexError, ValueError):
            return text
    return text


_ = gettext


def translate_error(error, language: str | None = None) -> str:
    """The message of a :class:`companion.errors.CompanionError` in ``language``."""
    lang = normalise(language) if language else _current.get()
    return error.render(translations(lang).gettext)
