"""Set-up mode without a box, a page or a radio: when a box is in set-up
mode (and how a reset puts it back there, its games kept), the checks on
what a phone sends (network names, Wi-Fi passwords, time zones, SSH keys,
the scan and the join's failures as nmcli words them), and the root side
with a fake system (``appliance.root.setup_apply``, ``appliance.root.wifi``):
the join from a request, the system request applied only in set-up mode,
the Wi-Fi unit brought up again after a reset.

The Setup page and its API, and the panel's set-up screens, are in
tests/web/test_setup.py."""

from __future__ import annotations

import base64
import json
import struct
import threading

import pytest

from appliance import owner, setup, wifi
from appliance.root import owner as owners
from appliance.setup import SetupError
from appliance.root import setup_apply as setup_root
from appliance.root import wifi as system_wifi


def _key(kind="ssh-ed25519", body=b"k" * 32):
    blob = struct.pack(">I", len(kind)) + kind.encode() + struct.pack(">I", len(body)) + body
    return f"{kind} {base64.b64encode(blob).decode()} marc-antoine@laptop"


# -- set-up mode ----------------------------------------------------------------------------------

def test_setup_mode_is_a_fresh_folder_or_a_reset_and_a_reset_keeps_games(tmp_path):
    assert setup.in_setup_mode(tmp_path), "no settings file, no record: fresh"
    (tmp_path / "companion.toml").write_text('name = "Éloïse"\n')
    assert not setup.in_setup_mode(tmp_path), "set up by hand"
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "1.jsonl").write_text("{}\n")
    setup.reset(tmp_path)
    assert setup.in_setup_mode(tmp_path)
    assert not (tmp_path / "companion.toml").exists()
    assert (tmp_path / setup.SET_ASIDE).read_text() == 'name = "Éloïse"\n', "set aside, not deleted"
    assert (tmp_path / "games" / "1.jsonl").read_text() == "{}\n"
    (tmp_path / "companion.toml").write_text('language = "fr"\n')     # the box's Language row
    assert setup.in_setup_mode(tmp_path), "the record decides once there is one"
    setup.mark_done(tmp_path)
    assert not setup.in_setup_mode(tmp_path)
    assert not setup.in_setup_mode(None)


# -- the checks ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("ssid", ["", "x" * 33, "é" * 17, "a\nb", "a\0b", None, 5])
def test_bad_network_names_are_refused(ssid):
    with pytest.raises(SetupError):
        setup.check_ssid(ssid)


def test_network_names_and_passwords_that_work():
    assert setup.check_ssid("Maison d'Éloïse") == "Maison d'Éloïse"
    assert setup.check_ssid("é" * 16) == "é" * 16
    assert setup.check_wifi_password("") == ""                         # an open network
    assert setup.check_wifi_password("a b;c\"d'e") == "a b;c\"d'e"
    assert setup.check_wifi_password("ab" * 32) == "ab" * 32           # 64 hex digits
    for bad in ("short", "x" * 64, "ab" * 31 + "zz", "pass\nword1", "pass\0word1", "mot-de-passé", 12345678):
        with pytest.raises(SetupError):
            setup.check_wifi_password(bad)


def test_time_zones_are_names_of_the_database_and_nothing_else(tmp_path):
    zones = tmp_path / "zoneinfo"
    (zones / "Europe").mkdir(parents=True)
    (zones / "Europe" / "Paris").write_bytes(b"TZif2...")
    (zones / "Europe" / "Fake").write_bytes(b"#!/bin/sh\n")
    assert setup.check_timezone("Europe/Paris", zones) == "Europe/Paris"
    for bad in ("Europe/Fake", "Europe/Nowhere", "../zoneinfo/Europe/Paris", "/etc/passwd", "Europe/../Europe/Paris",
                "Europe/Paris;reboot", "", None, "$(reboot)"):
        with pytest.raises(SetupError):
            setup.check_timezone(bad, zones)


def test_an_ssh_key_is_one_public_key_line():
    for kind in ("ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"):
        assert setup.check_ssh_key("  " + _key(kind) + "\n") == _key(kind)
    good = _key()
    bad = [
        good + "\nssh-ed25519 AAAA evil",                  # two lines
        'command="sh" ' + good,                           # options in front
        good.replace("ssh-ed25519 ", "ssh-dss ", 1),      # a type not taken
        _key().replace("ssh-ed25519", "ssh-rsa", 1),      # the blob says another type
        "ssh-ed25519 not-base64!",
        good + " \x1b[31m",                               # a comment with control characters
        "", None,
    ]
    for text in bad:
        with pytest.raises(SetupError):
            setup.check_ssh_key(text)


def test_the_scan_is_parsed_as_nmcli_escapes_it():
    out = ("home-wifi:72:WPA2\n"
           "home-wifi:40:WPA2\n"
           "caf\\:e\\\\bar:55:--\n"
           ":90:WPA2\n"                                   # hidden: no name
           "Maison d'Éloïse:30:WPA1 WPA2\n")
    assert setup.parse_scan(out) == [
        {"ssid": "home-wifi", "signal": 72, "secured": True},
        {"ssid": "caf:e\\bar", "signal": 55, "secured": False},
        {"ssid": "Maison d'Éloïse", "signal": 30, "secured": True}]


def test_why_a_join_failed():
    assert setup.classify_failure("Error: Connection activation failed: Secrets were required, but not "
                                  "provided.") == "wrong_password"
    assert setup.classify_failure("Error: No network with SSID 'x' found.") == "not_found"
    assert setup.classify_failure("Error: Connection activation failed: IP configuration could not be "
                                  "reserved") == "failed"


# -- the root side, with a fake system -------------------------------------------------------------

class FakeNM(system_wifi.System):
    """NetworkManager that knows one network, ``home`` with ``right-pass``."""

    def __init__(self):
        self.ran, self.profiles, self.address = [], {"old-uuid"}, None

    def run(self, argv, *, input=None, timeout=60):
        self.ran.append(list(argv))
        if argv[:4] == ["nmcli", "-t", "-f", "RUNNING"]:
            return 0, "running\n"
        if argv[:3] == ["nmcli", "-g", "GENERAL.STATE"]:
            return 0, "30 (disconnected)\n"
        if argv[:4] == ["nmcli", "-t", "-f", "UUID,TYPE"]:
            return 0, "".join(f"{u}:802-11-wireless\n" for u in sorted(self.profiles))
        if argv[:4] == ["nmcli", "-t", "-f", "SSID,SIGNAL,SECURITY"]:
            return 0, "home:70:WPA2\n"
        if "connect" in argv:
            ssid = argv[argv.index("connect") + 1]
            if ssid != "home":
                return 10, f"Error: No network with SSID '{ssid}' found."
            self.profiles.add(f"new-{len(self.ran)}")
            if argv[argv.index("password") + 1] != "right-pass":
                return 4, "Error: Connection activation failed: Secrets were required, but not provided."
            self.address = "192.168.77.42"
            return 0, "Device 'wlan0' successfully activated"
        if argv[:3] == ["nmcli", "connection", "delete"] and argv[3] == "uuid":
            self.profiles.discard(argv[4])
        if argv[:2] == ["ip", "-4"] and self.address:
            return 0, f"3: wlan0    inet {self.address}/24 brd 192.168.77.255 scope global wlan0\n"
        return 0, ""

    def which(self, name):
        return f"/usr/bin/{name}"


def test_a_wrong_password_is_told_apart_and_leaves_no_profile():
    nm = FakeNM()
    out = setup_root.join("wlan0", {"ssid": "home", "password": "wrong-pass"}, nm, sleep=lambda s: None)
    assert out == {"state": "failed", "ssid": "home", "reason": "wrong_password"}
    assert nm.profiles == {"old-uuid"}, "the failed profile is deleted, the others kept"
    out = setup_root.join("wlan0", {"ssid": "gone", "password": "whatever1"}, nm, sleep=lambda s: None)
    assert out["reason"] == "not_found"
    out = setup_root.join("wlan0", {"ssid": "home", "password": "right-pass"}, nm, sleep=lambda s: None)
    assert out == {"state": "joined", "ssid": "home", "address": "192.168.77.42"}
    assert ["nmcli", "--wait", "30", "device", "wifi", "connect", "home", "password", "right-pass",
            "ifname", "wlan0"] in nm.ran, "argv, never a shell string"


def _fake_radio(tmp_path):
    net = tmp_path / "net"
    (net / "wlan0" / "wireless").mkdir(parents=True)
    (net / "wlan0" / "operstate").write_text("up\n")       # a known network in reach...
    return net


def _wait_for(predicate, what):
    done = threading.Event()
    for _ in range(600):
        if predicate():
            return
        done.wait(0.05)
    raise AssertionError(f"never: {what}")


def test_in_setup_mode_the_box_raises_its_network_then_joins_from_a_request(tmp_path, monkeypatch):
    monkeypatch.setattr(system_wifi, "SYS_NET", _fake_radio(tmp_path))
    monkeypatch.setattr(setup_root.time, "sleep", lambda s: None)
    data = tmp_path / "data"
    data.mkdir()
    nm, stop, rc = FakeNM(), threading.Event(), []
    root = tmp_path / "root-owner"
    owners.set_setup_open(root, True)          # a box fresh from its image
    worker = threading.Thread(target=lambda: rc.append(system_wifi.main(data, {"wifi": "auto"}, system=nm, stop=stop,
                                                                        owner_dir=root)))
    worker.start()
    try:
        # ...and still its own network: set-up mode; the networks it saw for the page.
        _wait_for(lambda: wifi.own_status(data) is not None, "the own network")
        assert wifi.read_status(data).reason == "set-up"
        assert setup.read_networks(data) == [{"ssid": "home", "signal": 70, "secured": True}]
        # A hostile request (a newline in the name): refused, nothing tried.
        (data / setup.JOIN_REQUEST).write_text(json.dumps({"ssid": "home\n", "password": "right-pass"}))
        _wait_for(lambda: (setup.read_status(data) or {}).get("state") == "failed", "the refusal")
        assert not any("connect" in argv for argv in nm.ran)
        # The wrong password: back on its own network, and why.
        (data / setup.JOIN_REQUEST).write_text(json.dumps({"ssid": "home", "password": "wrong-pass"}))
        _wait_for(lambda: (setup.read_status(data) or {}).get("reason") == "wrong_password", "wrong password")
        assert wifi.own_status(data) is not None and setup.in_setup_mode(data)
        # The right one, with the owner's password chosen: joined, the own
        # network down for good, set-up done (for root too), the owner made.
        (data / setup.JOIN_REQUEST).write_text(json.dumps({"ssid": "home", "password": "right-pass",
                                                           "owner_password": "the owner's own"}))
        worker.join(30)
        assert rc == [0]
    finally:
        stop.set()
        worker.join(10)
    status = setup.read_status(data)
    assert status["state"] == "joined" and status["address"] == "192.168.77.42"
    assert wifi.read_status(data).mode == "join"
    assert not setup.in_setup_mode(data)
    assert not owners.setup_open(root) and owners.verifies("the owner's own", root)
    assert ["nmcli", "connection", "down", system_wifi.CONNECTION] in nm.ran


def test_the_service_folder_cannot_put_root_in_setup_mode(tmp_path, monkeypatch):
    """Set-up mode for root is root's own record: a service that writes
    {"done": false} and a join request gets no join and no own network
    raised for set-up."""
    monkeypatch.setattr(system_wifi, "SYS_NET", _fake_radio(tmp_path))
    monkeypatch.setattr(setup_root.time, "sleep", lambda s: None)
    data = tmp_path / "data"
    data.mkdir()
    setup.mark_done(data, False)
    (data / setup.JOIN_REQUEST).write_text(json.dumps({"ssid": "home", "password": "right-pass"}))
    root = tmp_path / "root-owner"
    owners.set_setup_open(root, False)
    nm, stop, rc = FakeNM(), threading.Event(), []
    worker = threading.Thread(target=lambda: rc.append(system_wifi.main(data, {"wifi": "join"}, system=nm, stop=stop,
                                                                        owner_dir=root)))
    worker.start()
    worker.join(30)
    stop.set()
    worker.join(10)
    assert rc == [0], "the setting (join) decides: no own network raised for set-up"
    assert not any("connect" in argv for argv in nm.ran)
    assert wifi.read_status(data).mode == "join"


def test_the_system_request_follows_roots_own_record_and_the_owner_password(tmp_path):
    data, ssh, sshd, root = tmp_path / "data", tmp_path / "root-ssh", tmp_path / "sshd.d", tmp_path / "owner"
    data.mkdir()
    nm = FakeNM()

    def ask(**request):
        (data / setup.SYSTEM_REQUEST).write_text(json.dumps(request))
        return setup_root.apply_system(data, nm, ssh_dir=ssh, sshd_dir=sshd, owner_dir=root)

    # No record: a box installed by hand, never opened: nothing at all.
    status = ask(timezone="Europe/Paris", ssh_key=_key(), owner_password="attacker's own", done=True)
    assert status["ssh"] == "refused" and nm.ran == [] and not (ssh / "authorized_keys").exists()
    assert owners.owner_hash(root) is None
    # Fresh from the image: set-up's steps; the key only with the owner made.
    owners.set_setup_open(root, True)
    status = ask(timezone="Europe/Paris", hostname="marc-antoine", ssh_key=_key())
    assert status["ssh"] == "refused" and not (ssh / "authorized_keys").exists()
    assert ["timedatectl", "set-timezone", "Europe/Paris"] in nm.ran
    assert ["hostnamectl", "set-hostname", "marc-antoine"] in nm.ran
    status = ask(ssh_key=_key(), owner_password="the owner's own", done=True)
    assert status["ssh"] == "on"
    assert (ssh / "authorized_keys").read_text() == f"{_key()} # {setup_root.KEY_MARK}\n"
    assert "PasswordAuthentication no" in (sshd / "companion-setup.conf").read_text()
    assert not (data / setup.SYSTEM_REQUEST).exists()
    assert not owners.setup_open(root), "finished: closed for root"
    # Set up: the PIN's set-up steps and another key need the owner's password.
    nm.ran.clear()
    setup.mark_done(data, False)               # what the service writes changes nothing for root
    (data / owner.RECORD).write_text(json.dumps({"hash": owner.hash_password("attacker's own")}))
    status = ask(ssh_key=_key(body=b"m" * 32), owner_password="attacker's own", timezone="Europe/Rome")
    assert status["ssh"] == "refused" and nm.ran == []
    assert (ssh / "authorized_keys").read_text() == f"{_key()} # {setup_root.KEY_MARK}\n"
    status = ask(ssh_key=_key(body=b"m" * 32), owner_password="the owner's own")
    assert status["ssh"] == "on" and _key(body=b"m" * 32) in (ssh / "authorized_keys").read_text()
    assert _key() not in (ssh / "authorized_keys").read_text(), "the owner's key replaced"
    # The owner removes it: gone, and SSH off.
    status = ask(ssh_remove=True, owner_password="the owner's own")
    assert status["ssh"] == "off" and "companion-setup" not in (ssh / "authorized_keys").read_text()
    assert ["systemctl", "disable", "--now", "ssh.service"] in nm.ran
    # Hostile input written straight into the file: refused whole.
    nm.ran.clear()
    status = ask(timezone="../../etc/shadow", ssh_key=_key(), owner_password="the owner's own")
    assert status["error"] and nm.ran == []


def test_an_owner_confirmed_reset_forgets_the_owner_and_opens_setup_for_root(tmp_path):
    data, ssh, sshd, root = tmp_path / "data", tmp_path / "root-ssh", tmp_path / "sshd.d", tmp_path / "owner"
    data.mkdir()
    owners.set_setup_open(root, True)
    owners.make_owner("the owner's own", root)
    owners.close_setup(root)
    nm = FakeNM()
    (data / setup.SYSTEM_REQUEST).write_text(json.dumps({"reset": True, "owner_password": "a wrong one!"}))
    setup_root.apply_system(data, nm, ssh_dir=ssh, sshd_dir=sshd, owner_dir=root)
    assert owners.owner_hash(root) is not None and not owners.setup_open(root)
    (data / setup.SYSTEM_REQUEST).write_text(json.dumps({"reset": True, "owner_password": "the owner's own"}))
    assert setup_root.apply_system(data, nm, ssh_dir=ssh, sshd_dir=sshd, owner_dir=root) == {"reset": "done"}
    assert owners.owner_hash(root) is None and owners.setup_open(root)


def test_the_physical_reset_is_a_file_on_the_boot_partition(tmp_path):
    data, ssh, sshd, root, boot = (tmp_path / n for n in ("data", "root-ssh", "sshd.d", "owner", "boot"))
    for folder in (data, boot):
        folder.mkdir()
    owners.set_setup_open(root, True)
    owners.make_owner("the owner's own", root)
    owners.close_setup(root)
    setup_root.install_key(_key(), ssh)
    owner.write_hash(data, owner.hash_password("the owner's own"))
    setup.mark_done(data)
    (data / "companion.db").write_text("the games")
    nm = FakeNM()
    assert not setup_root.physical_reset(data, nm, boot_dirs=(boot,), ssh_dir=ssh, sshd_dir=sshd, owner_dir=root)
    assert owners.owner_hash(root) is not None
    (boot / owners.RESET_FILE).write_text("")
    assert setup_root.physical_reset(data, nm, boot_dirs=(boot,), ssh_dir=ssh, sshd_dir=sshd, owner_dir=root)
    assert owners.owner_hash(root) is None and owners.setup_open(root)
    assert owner.read_hash(data) is None and setup.in_setup_mode(data)
    assert "companion-setup" not in (ssh / "authorized_keys").read_text()
    assert (data / "companion.db").read_text() == "the games"
    assert not (boot / owners.RESET_FILE).exists(), "done once"


def test_a_reset_brings_the_wifi_unit_up_in_setup_mode(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setattr(setup_root.shutil, "which", lambda name: f"/usr/bin/{name}")
    nm = FakeNM()
    root = tmp_path / "owner"
    owners.set_setup_open(root, False)
    setup.mark_done(data)
    setup_root.main(data, nm, owner_dir=root)
    assert not any(argv[:2] == ["systemctl", "restart"] for argv in nm.ran), "set up: left alone"
    wifi.write_status(data, wifi.Status(mode="own", ssid="x", password="k7mxq2wv9pzt", address=wifi.ADDRESS,
                                        reason="the setting"))
    setup.reset(data)
    setup_root.main(data, nm, owner_dir=root)
    assert not any(argv[:2] == ["systemctl", "restart"] for argv in nm.ran), "the service's record: not root's"
    owners.set_setup_open(root, True)           # the owner confirmed the reset
    setup_root.main(data, nm, owner_dir=root)
    assert ["systemctl", "restart", "--no-block", "companion-wifi.service"] in nm.ran


def test_companion_owner_at_a_root_shell_sets_both_copies(tmp_path, monkeypatch):
    data, root = tmp_path / "data", tmp_path / "owner"
    data.mkdir()
    owners.set_setup_open(root, True)
    with pytest.raises(owner.OwnerError):
        owners.set_owner("short", data, root)
    assert owners.owner_hash(root) is None and owner.read_hash(data) is None
    (data / owner.RECORD).symlink_to(tmp_path / "elsewhere")
    owners.set_owner("the owner's own", data, root)
    assert owners.verifies("the owner's own", root) and not owners.setup_open(root)
    assert owner.verify("the owner's own", owner.read_hash(data))
    assert not (tmp_path / "elsewhere").exists(), "the planted link replaced, never followed"
