"""``appliance-vm --update``, last: one backup file restored on a fresh box.

On the installed box, after everything before it has filled its history
(the power cuts' games, the update check's game, the set-up round's name and
Wi-Fi settings), a phone adds a player to the roster, reads what phones can
read (the history's games, each game's page and its CSV and JSON Lines
exports, the statistics, the roster, the table's state) and downloads the
backup (``GET /api/backup``, the PIN).  The box is then made fresh as a new
card leaves it after install.sh and ``companion owner`` (its data folder
emptied but for the set-up flag and the owner's hash), the file is sent back
as a phone sends it (``POST /api/backup/restore``, the owner's password: the
PIN alone is refused) and, once the companion has restarted, the phone's
reads, the table's settings (read in the guest by the companion's own
``config.load``) and the box's Wi-Fi password must be the same, compared,
not assumed: ``"backup": {"restored_equal", ...}`` in the summary.
"""

from __future__ import annotations

import http.client
import json
import time

import update_check

ASIDE = "/var/lib/companion-before-restore"
SETTINGS = ("import json, sys; from pathlib import Path; from companion import config; "
            "from appliance.backup import TABLE_SETTINGS; c = config.load(Path(sys.argv[1])); "
            "print(json.dumps({k: c.get(k) for k in TABLE_SETTINGS}, sort_keys=True))")


def seen(vm) -> dict:
    """What a phone reads of the history, statistics, roster and table."""
    def get(path):
        code, body = vm.http("GET", path, timeout=120)
        if code != 200:
            raise AssertionError(f"GET {path}: {code} {body[:200]!r}")
        return body

    out = {path: json.loads(get(path)) for path in ("/api/history/games", "/api/stats", "/api/players",
                                                      "/api/state")}
    for game in out["/api/history/games"]["games"]:
        gid = game["id"]
        for path in (f"/api/history/{gid}", f"/api/history/{gid}/export.csv",
                     f"/api/history/{gid}/export.jsonl"):
            out[path] = get(path).decode("utf-8")
    return out


def settings(vm, folder: str) -> dict:
    res = vm.run(["runuser", "-u", "companion", "--", "/opt/companion/current/venv/bin/python", "-c",
                  SETTINGS, folder], timeout=120)
    if not res.ok:
        raise AssertionError(f"reading the settings of {folder}: {res.stderr[-400:]}")
    return json.loads(res.stdout)


def check(run, say) -> dict:
    vm = run.vm
    result = {"ok": False, "restored_equal": False}
    pin = {"X-Table-Pin": vm.pin}
    code, body = vm.http("POST", "/api/players", {"name": "Zoë-Éloïse"}, pin, timeout=60)
    if code not in (200, 201):
        run.fail(f"--update (backup): adding a player answered {code} {body[:200]!r}")
    before, settings_before = seen(vm), settings(vm, "/var/lib/companion")
    code, backup = vm.http("GET", "/api/backup", headers=pin, timeout=300)
    if code != 200 or not backup.startswith(b"PK"):
        run.fail(f"--update (backup): GET /api/backup answered {code} {backup[:200]!r}")
        return result
    result.update(bytes=len(backup), games=len(before["/api/history/games"]["games"]))

    if getattr(vm, "owner_password", None) is None:      # update_check makes it first, at its start
        update_check.make_owner(vm)
    # A fresh box: as install.sh and `companion owner` leave a new card (set
    # up, an owner, no games, no settings).  The owner's hash stays: a
    # restore is the owner's to ask for, and the owner is root's to make.
    vm.must(f"systemctl stop companion && rm -rf {ASIDE} && mkdir {ASIDE} && "
            f"find /var/lib/companion -mindepth 1 -maxdepth 1 ! -name setup.json ! -name owner.json "
            f"-exec mv -t {ASIDE} {{}} + && systemctl start companion", timeout=300)
    run.guest_serving()
    vm.wait_http()
    empty = seen(vm)["/api/history/games"]["games"]
    if empty:
        run.fail(f"--update (backup): the emptied box still shows {len(empty)} games")
        return result
    # The table PIN alone does not restore (an empty zip: if it were taken,
    # it would be refused for its contents, not for the credential, and the
    # emptied box has nothing to lose).
    code, body = vm.http("POST", "/api/backup/restore", b"PK\x05\x06" + bytes(18),
                         dict(pin, **{"Content-Type": "application/zip"}), timeout=120)
    result["pin_alone"] = code
    if code != 401:
        run.fail(f"--update (backup): a restore sent with the table PIN alone answered {code} {body[:200]!r}, "
                 "not 401")
        run.guest_serving()
        vm.wait_http()
    t = time.monotonic()
    code, body = vm.http("POST", "/api/backup/restore", backup,
                         update_check.owner(vm, **{"Content-Type": "application/zip"}), timeout=300)
    if code != 202:
        run.fail(f"--update (backup): POST /api/backup/restore answered {code} {body[:300]!r}")
        return result
    # The companion restarts to swap the restored store in: wait for the games.
    end = time.monotonic() + 600
    while time.monotonic() < end:
        time.sleep(2)
        try:
            code, body = vm.http("GET", "/api/history/games", timeout=10)
        except (OSError, http.client.HTTPException):      # the companion restarting
            continue
        if code == 200 and len(json.loads(body)["games"]) == result["games"]:
            break
    run.guest_serving()
    result["restore_s"] = round(time.monotonic() - t, 1)
    after, settings_after = seen(vm), settings(vm, "/var/lib/companion")
    wifi = vm.sh(f"cmp -s {ASIDE}/wifi-password /var/lib/companion/wifi-password || "
                 f"! test -e {ASIDE}/wifi-password -o -e /var/lib/companion/wifi-password")
    differ = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    result.update(restored_equal=not differ and settings_before == settings_after and wifi.ok,
                  compared=len(before), settings=sorted(k for k, v in settings_before.items() if v is not None))
    if differ:
        result["differ"] = differ[:10]
    if settings_before != settings_after:
        result["settings_differ"] = sorted(k for k in settings_before
                                           if settings_before[k] != settings_after.get(k))
    if not wifi.ok:
        result["wifi_password_differs"] = True
    result["ok"] = result["restored_equal"]
    if not result["ok"]:
        run.fail(f"--update (backup): the fresh box restored from the backup is not the same: {result}")
    say(f"vm: backup: {result['bytes']} bytes, {result['games']} games; restored on the emptied box in "
        f"{result['restore_s']} s: {len(before)} phone reads, the settings and the Wi-Fi password "
        f"{'the same' if result['restored_equal'] else 'NOT the same'}")
    return result

