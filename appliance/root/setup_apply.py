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

from appliance import setup as core
from companion.config import default_data_dir
from appliance.setup import SetupError

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
    None; a request that does not pass the checks comes back as the error."""
    path = Path(data_dir) / core.JOIN_REQUEST
    if not path.exists():
        return None
    raw = core.read_json(path)
    try:
        path.unlink()
    except OSError:
        pass
    try:
        return core.check_join(raw)
    except SetupError as exc:
        return exc


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
    path = Path(data_dir) / core.SYSTEM_REQUEST
    if not path.exists():
        return None
    raw = core.read_json(path)
    try:
        path.unlink()
    except OSError:
        pass
    try:
        return core.check_system(raw)
    except SetupError as exc:
        return exc


def has_sshd(system) -> bool:
    return bool(system.which("sshd")) or Path("/usr/sbin/sshd").exists()


def install_key(key: str, ssh_dir: Path = ROOT_SSH) -> None:
    """The key in root's ``authorized_keys`` (the set-up's own line
    replaced, every other line kept)."""
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    path = ssh_dir / "authorized_keys"
    try:
        lines = [ln for ln in path.read_text().splitlines() if not ln.endswith(f"# {KEY_MARK}")]
    except FileNotFoundError:
        lines = []
    lines.append(f"{key} # {KEY_MARK}")
    tmp = path.with_name("authorized_keys.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


#: sshd drop-in: root by key only, no password anywhere.
SSHD_CONF = ("# made by companion setup-apply: SSH for the key pasted on the Setup page\n"
             "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
             "KbdInteractiveAuthentication no\n")


def apply_system(data_dir: Path, system, *, ssh_dir: Path = ROOT_SSH,
                 sshd_dir: Path = Path("/etc/ssh/sshd_config.d")) -> dict:
    """Apply a pending system request, only while the box is in set-up mode
    (the PIN on the panel opens set-up, never a root shell afterwards).
    Returns (and writes) what happened, field by field."""
    request = take_system_request(data_dir)
    status = core.read_json(Path(data_dir) / core.SYSTEM_STATUS) or {}
    if not isinstance(status, dict):
        status = {}
    if request is None:
        return status
    if isinstance(request, SetupError):
        status["error"] = str(request)
    elif not core.in_setup_mode(data_dir):
        status["error"] = "the box is not in set-up mode"
    else:
        status.pop("error", None)
        if "timezone" in request:
            rc, out = system.run(["timedatectl", "set-timezone", request["timezone"]], timeout=30)
            status["timezone"] = request["timezone"] if rc == 0 else None
        if "hostname" in request:
            rc, out = system.run(["hostnamectl", "set-hostname", request["hostname"]], timeout=30)
            status["hostname"] = request["hostname"] if rc == 0 else None
        if "ssh_key" in request:
            if not has_sshd(system):
                status["ssh"] = "no_sshd"
            else:
                install_key(request["ssh_key"], ssh_dir)
                sshd_dir.mkdir(parents=True, exist_ok=True)
                (sshd_dir / "companion-setup.conf").write_text(SSHD_CONF)
                rc, out = system.run(["systemctl", "enable", "--now", "ssh.service"], timeout=60)
                status["ssh"] = "on" if rc == 0 else "failed"
    core.write_private(Path(data_dir) / core.SYSTEM_STATUS, json.dumps(status) + "\n")
    return status


def main(data_dir: Path, system=None) -> int:
    """``companion setup-apply``: the pending system request; then, if the
    box is in set-up mode (a Reset on its buttons) and its Wi-Fi unit is not
    running, start it: set-up mode raises the box's own network."""
    from .wifi import System

    system = system or System()
    status = apply_system(Path(data_dir), system)
    if status.get("error"):
        print(f"companion setup-apply: {status['error']}", flush=True)
    if core.in_setup_mode(data_dir) and shutil.which("systemctl"):
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
    return main(Path(args.data) if args.data else default_data_dir())
