"""The settings file ``<data>/companion.toml``, edited one key at a time.

The box's menu (Language, Speak) and the Setup page (name, language) set a
top-level key and touch nothing else a person wrote there, durably (a power
cut leaves the old file or the new one: :mod:`companion.durable`).
"""

from __future__ import annotations

import json
import logging
import re
import stat
from pathlib import Path

from companion import durable

log = logging.getLogger("companion.settings")

_FIRST_TABLE = re.compile(r"^[ \t]*\[", re.MULTILINE)


def save_setting(path: Path, key: str, value) -> bool:
    """Set the top-level ``key`` (a string or a boolean) of the settings
    file ``path``, touching nothing else in it (comments, other settings):
    the line is replaced, or added at the top.  A file that does not parse,
    or whose edit would not give exactly that change, is left alone.
    Returns whether the file now says ``key = value``."""
    import tomllib      # here: the box's start need not pay for its regexes

    line = f"{key} = {json.dumps(value, ensure_ascii=False)}"   # a JSON string or boolean is TOML too
    pattern = re.compile(rf"^[ \t]*{re.escape(key)}[ \t]*=.*$", re.MULTILINE)
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        before = tomllib.loads(text)
        table = _FIRST_TABLE.search(text)
        head_end = table.start() if table else len(text)
        match = pattern.search(text, 0, head_end)
        if match:
            new = text[:match.start()] + line + text[match.end():]
        else:
            new = line + "\n" + text
        after = tomllib.loads(new)
        if after != {**before, key: value}:
            log.warning("not saving %s: %s has a layout this edit does not handle", key, path)
            return False
        if new == text:
            return True
        # Durably, keeping the file's mode (it may hold the box's Wi-Fi password).
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
        durable.write_text(path, new, mode=mode)
        return True
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        log.warning("%s is not saved in %s: %s", key, path, exc)
        return False
