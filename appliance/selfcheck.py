"""The self-check a new version passes before it is kept (``companion self-check``).

Run by the root installer as the service's user, with the service stopped,
from the new release's own environment: the store opens (which migrates it
forward, and refuses one a newer companion wrote), and the public samples
shipped in the package (``companion/samples``, copies of replay samples
from ``tests/data/scenarios``) replay to their expected states.  An
environment that lacks a library fails at the imports it needs.
"""

from __future__ import annotations

import json
from pathlib import Path

import companion
from companion.errors import CompanionError
from companion.i18n import N_

SAMPLES = Path(companion.__file__).with_name("samples")     # the core's public samples


class SelfCheckFailed(CompanionError):
    """The new version cannot serve this box."""


def mismatch(got, want, path="state"):
    """None when ``got`` holds every key of ``want`` with an equal value (types strict)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return path
        for key, sub in want.items():
            if key not in got:
                return f"{path}.{key}"
            found = mismatch(got[key], sub, f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return path
        for i, (g, w) in enumerate(zip(got, want)):
            found = mismatch(g, w, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if type(got) is type(want) and got == want else path


def check_samples() -> int:
    """Replay every packaged sample; the number replayed, or SelfCheckFailed."""
    from companion.timeline import ReplayError, replay

    samples = sorted(SAMPLES.glob("*.jsonl"))
    if not samples:
        raise SelfCheckFailed(N_("self-check: the package holds no samples"))
    for log in samples:
        want = json.loads(log.with_name(log.name[:-len(".jsonl")] + ".expect.json").read_text("utf-8"))
        try:
            got = replay(log.read_text("utf-8").splitlines()).public()
        except ReplayError:
            got = None
        if got is None or mismatch(got, want.get("state", {})):
            raise SelfCheckFailed(N_("self-check: the sample {name} no longer replays as it should"),
                                  name=log.stem)
    return len(samples)


def check(data_dir: Path) -> str:
    """The whole check; a one-line summary, or SelfCheckFailed / the store's own error."""
    from companion.store import Store

    store = Store(data_dir)
    try:
        games = len(store.games())
    finally:
        store.close()
    replayed = check_samples()
    return f"self-check: the store opens ({games} games), {replayed} samples replay"


def command(args) -> int:
    from companion import config as cfg

    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    summary = check(data_dir)
    # The adapters must import too: a release whose web side is broken would
    # pass the core's check and then crash at every start.
    import hardware  # noqa: F401
    import web.app  # noqa: F401
    print(summary)
    return 0
