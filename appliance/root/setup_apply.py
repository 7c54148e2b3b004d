"""Set-up from a phone: the root side (appliance/setup.py has the why).

Two parts, both run as root, both reading the web side's request files as
hostile input (checked again with the same functions, passed to commands
as argument lists, never through a shell):

* :func:`join`: called by ``companion wifi`` (appliance/root/wifi.py) while it
  holds the box's own network in set-up mode: the access point down, the
  chosen network tried with NetworkManager, and on failure the access point
  up again and the reason written ("wrong password" apart from "not found");
* :func:`apply_system`: ``companion setup-apply`` (companion-setup.service,
  started by companion-setup.path when the web side writes a request): the
  time zone, the host name (``<name>.local``) and SSH for one pasted key.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

from appliance import owner as owner_rules
from appliance import setup as core
from companion import durable
from companion.durable import write_text
from appliance.setup import SetupError
from companion.config import default_data_dir

from . import owner as owners
from . import safefs

log = logging.getLogger("hardware.setup")

ROOT_SSH = Path("/root/.ssh")
KEY_MARK = "companion-setup"


# -- the networks in reach ---------------------------------------------------------------------

def scan(ifname: str, system, sleep=time.sleep) -> list[dict]:
    """What the radio sees, before it becomes an access point (it cannot
    scan while it is one on most drivers)."""
    system.run(["nmcli", "device", "wifi", "rescan", "ifname", ifname], timeout=30)
    sleep(3.0)
    rc, out = system.run(["nmcli", "-t", "-f", "SSID,SIGNAL,SECURITY", "device", "wifi", "list",
                          "ifname", ifname], timeout=30)
    return core.parse_scan(out) if rc == 0 else []


def write_networks(data_dir: Path, networks: list[dict]) -> None:
    core.write_private(Path(data_dir) / core.NETWORKS, json.dumps(networks) + "\n")


def write_status(data_dir: Path, **status) -> None:
    core.write_private(Path(data_dir) / core.STATUS, json.dumps(status) + "\n")


# -- joining -------------------------------------------------------------------------------------

def take_join_request(data_dir: Path) -> dict | SetupError | None:
    """The pending join request (the file is removed whatever it holds), or
    None; a request that does not pass the checks comes back as the error.
    Its ``owner_password``, if any, is kept for :func:`join_allowed`."""
    path = Path(data_dir) / core.JOIN_REQUEST
    if not os.path.lexists(path):
        return None
    raw = core.read_json(path)
    _remove(data_dir, core.JOIN_REQUEST)
    try:
        request = core.check_join(raw)
    except SetupError as exc:
        return exc
    if isinstance(raw.get("owner_password"), str):
        request["owner_password"] = raw["owner_password"]
    return request


def join_allowed(request: dict, owner_dir: Path = owners.ROOT_DIR) -> bool:
    """A join is set-up's step while set-up is open for root (the request's
    password, the first one, makes the owner); after that, the owner's."""
    password = request.get("owner_password")
    if owners.setup_open(owner_dir):
        if password is not None and owners.owner_hash(owner_dir) is None:
            owners.make_owner(password, owner_dir)
        return True
    return owners.verifies(password, owner_dir)


def connect_argv(ssid: str, password: str, ifname: str) -> list[str]:
    argv = ["nmcli", "--wait", str(core.JOIN_WAIT_S), "device", "wifi", "connect", ssid]
    if password:
        argv += ["password", password]
    return argv + ["ifname", ifname]


def wifi_profiles(system) -> set[str]:
    rc, out = system.run(["nmcli", "-t", "-f", "UUID,TYPE", "connection", "show"], timeout=15)
    return {line.split(":")[0] for line in out.splitlines() if rc == 0 and "wireless" in line}


def radio_address(ifname: str, system) -> str | None:
    rc, out = system.run(["ip", "-4", "-o", "addr", "show", "dev", ifname], timeout=10)
    for word in out.split() if rc == 0 else []:
        if "/" in word and word.count(".") == 3:
            return word.split("/")[0]
    return None


def join(ifname: str, request: dict, system, *, sleep=time.sleep, clock=time.monotonic) -> dict:
    """Try the network (the access point already down).  The outcome:
    ``{"state": "joined", "address"}`` or ``{"state": "failed", "reason"}``.
    A failed attempt leaves no profile behind (the next start must not
    try a wrong password again)."""
    ssid, password = request["ssid"], request["password"]
    before = wifi_profiles(system)
    system.run(["nmcli", "device", "wifi", "rescan", "ifname", ifname], timeout=30)
    sleep(3.0)
    rc, out = system.run(connect_argv(ssid, password, ifname), timeout=core.JOIN_WAIT_S + 30)
    address = None
    if rc == 0:
        end = clock() + 20
        while address is None and clock() < end:
            address = radio_address(ifname, system)
            if address is None:
                sleep(1.0)
    if rc == 0 and address:
        return {"state": "joined", "ssid": ssid, "address": address}
    for uuid in wifi_profiles(system) - before:
        system.run(["nmcli", "connection", "delete", "uuid", uuid], timeout=30)
    reason = core.classify_failure(out) if rc != 0 else "failed"
    log.warning("setup: joining %r failed (%s): %s", ssid, reason, out.strip()[-300:])
    return {"state": "failed", "ssid": ssid, "reason": reason}


# -- the time zone, the host name, SSH -------------------------------------------------------------

def take_system_request(data_dir: Path) -> dict | SetupError | None:
    """The pending system request (removed whatever it holds), or None.
    Read without following a link, as everything root reads there."""
    path = Path(data_dir) / core.SYSTEM_REQUEST
    raw = core.read_json(path)
    if raw is None and not os.path.lexists(path):
        return None
    _remove(data_dir, core.SYSTEM_REQUEST)
    try:
        return check_root_request(raw)
    except SetupError as exc:
        return exc


def _remove(data_dir: Path, name: str) -> None:
    try:
        safefs.unlink(data_dir, name)
    except OSError:
        pass


def check_root_request(raw) -> dict:
    """A request for root, checked again: the set-up fields
    (:func:`appliance.setup.check_system`) and the owner's: ``owner_password``,
    ``done``, ``ssh_remove``, ``reset`` (flags: true or absent)."""
    out = core.check_system(raw)
    if not isinstance(raw, dict):
        return out
    if isinstance(raw.get("owner_password"), str):
        out["owner_password"] = raw["owner_password"]
    for flag in ("done", "ssh_remove", "reset"):
        if raw.get(flag) is True:
            out[flag] = True
    return out


def has_sshd(system) -> bool:
    return bool(system.which("sshd")) or Path("/usr/sbin/sshd").exists()


def _key_lines(ssh_dir: Path) -> list[str]:
    try:
        return [ln for ln in (ssh_dir / "authorized_keys").read_text().splitlines()
                if not ln.endswith(f"# {KEY_MARK}")]
    except FileNotFoundError:
        return []


def _write_keys(ssh_dir: Path, lines: list[str]) -> None:
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    write_text(ssh_dir / "authorized_keys", "".join(ln + "\n" for ln in lines), mode=0o600)


def install_key(key: str, ssh_dir: Path = ROOT_SSH) -> None:
    """The key in root's ``authorized_keys`` (the set-up's own line
    replaced, every other line kept), durably."""
    _write_keys(ssh_dir, [*_key_lines(ssh_dir), f"{key} # {KEY_MARK}"])


def remove_key(ssh_dir: Path = ROOT_SSH) -> bool:
    """The set-up's line gone (every other line kept); whether there was one."""
    path = ssh_dir / "authorized_keys"
    try:
        had = any(ln.endswith(f"# {KEY_MARK}") for ln in path.read_text().splitlines())
    except FileNotFoundError:
        return False
    if had:
        _write_keys(ssh_dir, _key_lines(ssh_dir))
    return had


#: sshd drop-in: root by key only, no password anywhere.
SSHD_CONF = ("# made by companion setup-apply: SSH for the owner's key (the Setup page)\n"
             "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
             "KbdInteractiveAuthentication no\n")
SSHD_FILE = "companion-setup.conf"


def ssh_off(system, ssh_dir: Path, sshd_dir: Path) -> None:
    """The owner's key and its drop-in gone, and SSH stopped and disabled."""
    remove_key(ssh_dir)
    if (sshd_dir / SSHD_FILE).exists():
        durable.remove(sshd_dir / SSHD_FILE)
    if has_sshd(system):
        system.run(["systemctl", "disable", "--now", "ssh.service"], timeout=60)


def apply_system(data_dir: Path, system, *, ssh_dir: Path = ROOT_SSH,
                 sshd_dir: Path = Path("/etc/ssh/sshd_config.d"), owner_dir: Path = owners.ROOT_DIR) -> dict:
    """Apply a pending request as far as root's own record allows
    (appliance/root/owner.py): set-up's steps while set-up is open for root,
    the owner made from the request that carries the first password, and
    SSH, a reset or anything else only with the owner's password compared
    against root's own copy.  Returns (and writes) what happened."""
    request = take_system_request(data_dir)
    status = core.read_json(Path(data_dir) / core.SYSTEM_STATUS) or {}
    if not isinstance(status, dict):
        status = {}
    if request is None:
        return status
    status.pop("error", None)
    if isinstance(request, SetupError):
        status["error"] = str(request)
        _write_status(data_dir, status)
        return status
    password = request.get("owner_password")
    setup_open = owners.setup_open(owner_dir)
    if setup_open and password is not None and owners.owner_hash(owner_dir) is None:
        owners.make_owner(password, owner_dir)
    owner = owners.allows(request, owner_dir)
    if request.get("reset"):
        if owner:
            ssh_off(system, ssh_dir, sshd_dir)
            owners.forget_owner(owner_dir)
            status = {"reset": "done"}
        else:
            status["error"] = "the owner password is needed for a reset"
        _write_status(data_dir, status)
        return status
    if "timezone" in request or "hostname" in request:
        if setup_open or owner:
            if "timezone" in request:
                rc, out = system.run(["timedatectl", "set-timezone", request["timezone"]], timeout=30)
                status["timezone"] = request["timezone"] if rc == 0 else None
            if "hostname" in request:
                rc, out = system.run(["hostnamectl", "set-hostname", request["hostname"]], timeout=30)
                status["hostname"] = request["hostname"] if rc == 0 else None
        else:
            status["error"] = "the box is set up: the owner password is needed"
    if "ssh_key" in request or request.get("ssh_remove"):
        if not owner:
            status["ssh"] = "refused"
            status["error"] = "SSH keys are the owner's: the owner password is needed"
        elif request.get("ssh_remove"):
            ssh_off(system, ssh_dir, sshd_dir)
            status["ssh"] = "off"
        elif not has_sshd(system):
            status["ssh"] = "no_sshd"
        else:
            install_key(request["ssh_key"], ssh_dir)
            sshd_dir.mkdir(parents=True, exist_ok=True)
            write_text(sshd_dir / SSHD_FILE, SSHD_CONF, mode=0o644)
            rc, out = system.run(["systemctl", "enable", "--now", "ssh.service"], timeout=60)
            status["ssh"] = "on" if rc == 0 else "failed"
    if request.get("done") and owner:
        owners.close_setup(owner_dir)
    _write_status(data_dir, status)
    return status


def _write_status(data_dir: Path, status: dict) -> None:
    core.write_private(Path(data_dir) / core.SYSTEM_STATUS, json.dumps(status) + "\n")


def physical_reset(data_dir: Path, system, *, boot_dirs=owners.BOOT_DIRS, ssh_dir: Path = ROOT_SSH,
                   sshd_dir: Path = Path("/etc/ssh/sshd_config.d"), owner_dir: Path = owners.ROOT_DIR) -> bool:
    """"Forgot the owner password": the file ``companion-reset-owner`` on
    the card's boot partition (which the service cannot write), read at
    boot.  The owner's password (root's copy and the service's), the
    owner's SSH key and SSH itself are forgotten and the box is in set-up
    mode again; games, players, the table's name and language, the box's
    Wi-Fi password and the release keys stay.  The file is removed."""
    found = owners.reset_file(boot_dirs)
    if found is None:
        return False
    ssh_off(system, ssh_dir, sshd_dir)
    owners.forget_owner(owner_dir)
    _remove(data_dir, owner_rules.RECORD)
    core.write_private(Path(data_dir) / core.RECORD, json.dumps({"done": False}) + "\n")
    try:
        durable.remove(found)
    except OSError as exc:        # a read-only boot partition: said, and done again at the next boot
        log.warning("owner reset: %s stays: %s", found, exc)
    log.warning("owner reset: the owner is forgotten; the box is in set-up mode")
    return True


def main(data_dir: Path, system=None, *, physical: bool = False, owner_dir: Path = owners.ROOT_DIR) -> int:
    """``companion setup-apply``: the pending request; then, if set-up is
    open for root (a reset) and the Wi-Fi unit is not running for it,
    start it: set-up raises the box's own network.  ``--physical-reset``
    (companion-reset.service, at boot): the physical reset first."""
    from .wifi import System

    system = system or System()
    if physical:
        physical_reset(Path(data_dir), system, owner_dir=owner_dir)
    status = apply_system(Path(data_dir), system, owner_dir=owner_dir)
    if status.get("error"):
        print(f"companion setup-apply: {status['error']}", flush=True)
    if owners.setup_open(owner_dir) and shutil.which("systemctl"):
        # Not running (it had joined a network), or running for another
        # reason (``wifi = "own"``): it decides set-up mode at its start.
        from appliance.wifi import read_status

        wifi = read_status(data_dir)
        rc, _out = system.run(["systemctl", "is-active", "--quiet", "companion-wifi.service"], timeout=15)
        if rc != 0 or wifi is None or wifi.reason != "set-up":
            system.run(["systemctl", "restart", "--no-block", "companion-wifi.service"], timeout=30)
    return 0


def command(args) -> int:
    """``companion setup-apply``: run by companion-setup.service, as root."""
    return main(Path(args.data) if args.data else default_data_dir(),
                physical=bool(getattr(args, "physical_reset", False)))
