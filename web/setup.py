"""The Setup page: a box with no settings yet, set up from a phone.

    GET  /setup         the page: name, language, time zone, owner password,
                        Join a Wi-Fi, SSH key, Finish
    GET  /api/setup     what the page shows, as JSON (public: no secret, no PIN)
    POST /api/setup     X-Table-Pin; JSON {"name", "language", "timezone",
                        "ssid", "password", "ssh_key", "owner_password",
                        "done"}, each optional

Only while the box is in set-up mode (appliance/setup.py: fresh, or "Reset
settings" on its buttons, confirmed by the owner): otherwise POST is
refused (409) whatever the credential, and the page says how to get there.

Set-up *ends* with ``"done": true`` (the page's Finish) or with a house
Wi-Fi joined (``ssid``): either needs the owner's password, chosen in that
request or an earlier one of the same set-up (``owner_password``,
appliance/owner.py says the rule).  An SSH key is taken only in the
request that finishes set-up; later it is the owner's (web/owner.py).

Every field is checked before anything is done; one bad field refuses the
whole request with a one-line message, and nothing changes.  The name and
language go into ``companion.toml`` at once, the owner's hash into
``owner.json``; the rest is for root (appliance/root/setup_apply.py) as
request files in the data folder, which root checks again against its own
record, never this folder's.

What GET shows (the networks in reach, the join's outcome, the box's new
address) is the same for anyone near the box, so it needs no PIN; it never
holds the Wi-Fi password typed, the PIN, or the pasted key.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from flask import Blueprint, jsonify, request

from appliance import owner
from appliance import setup as core
from companion.i18n import LANGUAGES, N_
from appliance.settings_file import save_setting

from .app import companion
from .errors import ApiError
from .guards import require_pin

bp = Blueprint("setup", __name__)

FIELDS = ("name", "language", "timezone", "ssid", "password", "ssh_key", "owner_password", "done")
#: Where the box has a root side to ask (the units systemd/install.sh
#: installs); elsewhere (a laptop) no request carries the owner's password,
#: which nobody would take and remove.
ROOT_UNIT = Path("/etc/systemd/system/companion-setup.path")


def root_side() -> bool:
    value = companion().config.get("root_requests")
    return ROOT_UNIT.exists() if value is None else bool(value)


def data_dir() -> Path | None:
    folder = companion().config.get("data_dir")
    return Path(folder) if folder else None


# The time-zone picker's groups: the regions of the time-zone database, as
# the page names them (a zone's own name is its city's, as the database spells it).
REGIONS = {"Africa": N_("Africa"), "America": N_("America"), "Antarctica": N_("Antarctica"),
           "Arctic": N_("Arctic"), "Asia": N_("Asia"), "Atlantic": N_("Atlantic Ocean"),
           "Australia": N_("Australia"), "Europe": N_("Europe"), "Indian": N_("Indian Ocean"),
           "Pacific": N_("Pacific Ocean")}


@lru_cache(maxsize=4)
def time_zones(zoneinfo: Path = core.ZONEINFO) -> tuple:
    """Every zone the box can take (a TZif file of its time-zone database,
    what :func:`appliance.setup.check_timezone` accepts), grouped by region:
    ``((region, ((zone, city), ...)), ...)``, cities in alphabetical order;
    "America/Argentina/Buenos_Aires" reads "Buenos Aires (Argentina)"."""
    groups = []
    for region in REGIONS:
        zones = []
        top = Path(zoneinfo) / region
        for folder, dirs, files in os.walk(top):
            dirs.sort()
            for name in files:
                path = Path(folder) / name
                try:
                    with open(path, "rb") as fh:
                        if fh.read(4) != b"TZif":
                            continue
                except OSError:
                    continue
                parts = path.relative_to(top).parts
                city = parts[-1].replace("_", " ")
                if len(parts) > 1:
                    city += " (" + ", ".join(p.replace("_", " ") for p in parts[:-1]) + ")"
                zones.append(("/".join((region,) + parts), city))
        if zones:
            groups.append((region, tuple(sorted(zones, key=lambda z: z[1].casefold()))))
    return tuple(groups)


def system_timezone() -> str | None:
    """The zone this computer runs on now (what ``timedatectl`` set): the
    target of /etc/localtime under the time-zone database, else /etc/timezone."""
    try:
        target = Path(os.path.realpath("/etc/localtime"))
        zone = target.relative_to(Path(os.path.realpath(core.ZONEINFO))).as_posix()
        if zone:
            return zone
    except (OSError, ValueError):
        pass
    try:
        return Path("/etc/timezone").read_text(encoding="utf-8").strip()[:64] or None
    except OSError:
        return None


def stored_timezone(folder: Path | None, system: dict) -> str | None:
    """The time zone the page shows as the box's: the one root applied, else
    one asked for and not applied yet (a request file root has not taken: on
    a laptop, none ever does), else the computer's own."""
    if isinstance(system, dict) and system.get("timezone"):
        return str(system["timezone"])
    asked = core.read_json(folder / core.SYSTEM_REQUEST) if folder else None
    if isinstance(asked, dict) and isinstance(asked.get("timezone"), str):
        return asked["timezone"][:64]
    return system_timezone()


def public_view() -> dict:
    """What /setup and /api/setup show: the same in every world."""
    c = companion()
    folder = data_dir()
    status = core.read_status(folder) if folder else None
    system = (core.read_json(folder / core.SYSTEM_STATUS) if folder else None) or {}
    view = {
        "setup_mode": bool(folder) and core.in_setup_mode(folder),
        "name": str(c.config.get("name") or ""),
        "language": str(c.config.get("language") or "en"),
        "languages": list(LANGUAGES),
        "networks": core.read_networks(folder) if folder else [],
        "join": None,
        "back_within_s": core.BACK_WITHIN_S,
        "ssh": system.get("ssh") if isinstance(system, dict) else None,
        "owner": bool(folder) and owner.read_hash(folder) is not None,
        "owner_rule": {"min": owner.MIN_LEN, "max": owner.MAX_LEN},
        "timezone": stored_timezone(folder, system),
    }
    if status:
        join = {k: status.get(k) for k in ("state", "ssid", "reason", "address", "hostname")}
        if status.get("state") == "joined":
            port = int(status.get("port") or c.config.get("port") or 8000)
            join["url"] = f"http://{status.get('address')}:{port}/" if port != 80 else f"http://{status.get('address')}/"
            if status.get("hostname"):
                join["local_url"] = join["url"].replace(str(status.get("address")), f"{status['hostname']}.local")
        view["join"] = join
    return view


def _nocache(response):
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/setup")
def setup_state():
    return _nocache(jsonify(public_view()))


def checked(body: dict) -> dict:
    """Every field given, checked; the first bad one refuses the lot."""
    out: dict = {}
    if "name" in body:
        out["name"] = core.check_name(body["name"])
    if "language" in body:
        out["language"] = core.check_language(body["language"])
    if body.get("timezone"):
        out["timezone"] = core.check_timezone(body["timezone"])
    if body.get("ssid"):
        out.update(core.check_join({"ssid": body["ssid"], "password": body.get("password", "")}))
    elif body.get("password"):
        raise core.SetupError("ssid", N_("network: pick one"))
    if body.get("ssh_key"):
        out["ssh_key"] = core.check_ssh_key(body["ssh_key"])
    if body.get("owner_password") not in (None, ""):
        out["owner_password"] = owner.check_password(body["owner_password"])
    if "done" in body and not isinstance(body["done"], bool):
        raise core.SetupError("done", N_("done: true or false"))
    return out


def root_request(folder: Path, name: str, request: dict) -> None:
    """A request file for root; the owner's password only where root takes it."""
    if not root_side():
        request.pop("owner_password", None)
    core.write_private(folder / name, json.dumps(request) + "\n")


@bp.post("/api/setup")
def setup_submit():
    c = companion()
    folder = data_dir()
    if folder is None or not core.in_setup_mode(folder):
        # Before the PIN: a set-up box refuses set-up to everyone alike.
        raise ApiError(409, N_("this box is already set up: to set it up again, Menu ▸ Reset settings on the box, "
                               "then the owner confirms"))
    require_pin(N_("setting up the box needs the table PIN (header X-Table-Pin), shown on the box"))
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or set(body) - set(FIELDS):
        raise ApiError(400, N_("send a JSON object with some of: {fields}"), fields=", ".join(FIELDS))
    try:
        values = checked(body)
    except (core.SetupError, owner.OwnerError) as exc:
        raise ApiError(400, exc.template, **exc.params) from None
    finishing = body.get("done") is True
    joining = "ssid" in values
    if "ssh_key" in values and not finishing:
        raise ApiError(400, N_("an SSH key is added when set-up ends (Finish), or later by the owner"))
    if (finishing or joining) and "owner_password" not in values and owner.read_hash(folder) is None:
        raise ApiError(400, N_("choose the owner password to finish set-up ({low} to {high} characters)"),
                       low=owner.MIN_LEN, high=owner.MAX_LEN)
    if core.read_json(folder / core.RECORD) is None:
        # A fresh box has no record; writing companion.toml must not end set-up.
        core.mark_done(folder, False)
    settings = folder / core.SETTINGS
    for key in ("name", "language"):
        if key in values and not save_setting(settings, key, values[key]):
            raise ApiError(409, N_("the settings file could not be written: nothing was changed"))
    for key in ("name", "language"):
        if key in values:
            c.config[key] = values[key]
    if "owner_password" in values:
        owner.write_hash(folder, owner.hash_password(values["owner_password"]))
    system = {k: values[k] for k in ("timezone", "ssh_key", "owner_password") if k in values}
    if "name" in values:
        system["hostname"] = core.hostname_for(values["name"])
    if finishing and not joining:
        system["done"] = True
    if set(system) - {"owner_password"}:
        root_request(folder, core.SYSTEM_REQUEST, system)
    if joining:
        core.write_private(folder / core.STATUS, json.dumps({"state": "joining", "ssid": values["ssid"]}) + "\n")
        join = {"ssid": values["ssid"], "password": values["password"]}
        if "owner_password" in values:
            join["owner_password"] = values["owner_password"]
        root_request(folder, core.JOIN_REQUEST, join)
    elif finishing:
        # A join ends set-up when it succeeds (a failed one leaves set-up
        # open, to try again); without one, Finish ends it now.
        core.mark_done(folder, True)
    view = public_view()
    view["saved"] = sorted(k for k in values if k not in ("password", "owner_password"))
    if "owner_password" in values:
        view["saved"].append("owner")
    return _nocache(jsonify(view))


@bp.get("/setup")
def setup_page():
    from .pages import _common, _html, qr_svg

    view = public_view()
    join = view["join"] or {}
    qr = qr_svg(join["url"]) if join.get("state") == "joined" and join.get("url") else ""
    zones = time_zones()
    listed = view["timezone"] == "UTC" or any(view["timezone"] == z for _r, cities in zones for z, _c in cities)
    return _html("setup.html", view=view, join=join, qr=qr, reasons=core.REASONS, zones=zones,
                 zone_listed=listed, regions=REGIONS, **_common("setup"))
