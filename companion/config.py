"""Where the companion keeps its data, and its settings file.

Settings come from, in order of strength: command-line flags, environment
variables (``COMPANION_PIN``, ``COMPANION_DATA``, ``COMPANION_LANG``,
``COMPANION_BOARD``, ``COMPANION_HUB_URL``, ``COMPANION_HUB_KEY``, ``COMPANION_PANEL_DIM_S``,
``COMPANION_PANEL_SLEEP_S``), the
TOML file ``companion.toml`` in the data folder (or ``--config FILE``), and
the defaults below.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULTS = {
    "language": "en",
    "pin": None,                 # None: a random PIN at every start
    "host": "0.0.0.0",
    "port": 8000,
    "name": "companion",        # the friendly name on the network
    "mdns": True,                # advertise it by mDNS (real box only, never with --mock)
    "wifi": "auto",              # "auto": the box's own Wi-Fi when no known network comes; "own"; "join" (appliance/root/wifi.py)
    "wifi_password": None,       # None: drawn once, kept in <data>/wifi-password (also wifi_ssid, wifi_wait_s, wifi_country, wifi_channel)
    "allowed_hosts": [],         # more host names the web answers to (web/hosts.py; its own are always fine)
    # The box's board (hardware/boards.py, wiring.md): "wired",
    # "adafruit-oled-bonnet", "waveshare-oled-hat"; None: found at each start.
    "board": None,
    "display": {"driver": "ssd1306", "port": 1, "address": 0x3C},   # rotate: 0 unless a board says 2
    "buttons": {"up": 17, "down": 27, "ok": 22, "back": 23},
    "bounce_ms": 30,
    "hold_s": 1.0,
    "leds": [],                  # BCM pins, one per seat, lit while its entry is locked
    "buzzer": None,              # BCM pin of a buzzer
    # Only seed an empty roster of the table's players (companion/roster.py);
    # from then on the names typed on a phone (/control) are the box's list.
    "names": ["Ann", "Ben", "Chloé", "Dan", "Élodie", "François", "Zoë", "Łukasz"],
    # The OLED dims, then sleeps, when nobody touches the table (seconds; 0:
    # never; hardware/panel_care.py); its brightness: low, medium or high (Menu → Brightness).
    "panel_dim_s": 600,
    "panel_sleep_s": 1800,
    "panel_brightness": "medium",
    "speak": False,              # the box says reveals, round ends and the winner (espeak-ng; Menu → Speak)
    "max_streams": 100,
    "threads": 0,                # 0: max_streams + 16
    "hub_url": None,             # the club hub this box feeds (hub/feeder.py), e.g. http://hub.local:8100
    "hub_key": None,             # its key for this box (``companion hub add-box``)
    # The game store's bounds (companion/limits.py, docs/security.md): beyond
    # them a new game either moves the oldest finished games to
    # backups/pruned/ ("prune") or is refused with a message ("refuse").
    "store_max_games": 10_000,
    "store_max_mb": 100,
    "store_full": "prune",
    "import_burst": 10,          # imports from phones, table-wide: 10 at once,
    "import_refill_s": 60.0,     # then one a minute
}


def default_data_dir() -> Path:
    """``$COMPANION_DATA``, systemd's ``$STATE_DIRECTORY``, or the XDG data folder."""
    for var in ("COMPANION_DATA", "STATE_DIRECTORY"):
        if os.environ.get(var):
            return Path(os.environ[var].split(":")[0])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "companion"


def load(data_dir: Path, path: str | None = None, *, read=None) -> dict:
    """The settings: defaults, overlaid by the TOML file, overlaid by the environment.

    ``read(path) -> bytes | None`` reads the file instead of ``open``: root
    passes one that follows no link in the service's folder."""
    config = {k: (dict(v) if isinstance(v, dict) else v) for k, v in DEFAULTS.items()}
    file = Path(path) if path else Path(data_dir) / "companion.toml"
    raw = None
    if read is not None:
        raw = read(file)
    elif file.exists():
        raw = file.read_bytes()
    if raw is not None:
        import tomllib      # only with a file: its regexes cost ~5 ms at each start

        loaded = tomllib.loads(raw.decode("utf-8"))
        for key, value in loaded.items():
            if isinstance(config.get(key), dict) and isinstance(value, dict):
                config[key].update(value)
            else:
                config[key] = value
    if os.environ.get("COMPANION_PIN"):
        config["pin"] = os.environ["COMPANION_PIN"]
    if os.environ.get("COMPANION_LANG"):
        config["language"] = os.environ["COMPANION_LANG"]
    for key in ("board", "hub_url", "hub_key", "panel_dim_s", "panel_sleep_s"):
        if os.environ.get(f"COMPANION_{key.upper()}"):
            config[key] = os.environ[f"COMPANION_{key.upper()}"]
    return config
