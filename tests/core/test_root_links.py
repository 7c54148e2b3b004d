"""Root's hands in the service's folder: nothing planted there is followed.

The companion's service owns its data folder; root reads requests there and
writes answers back (set-up's status, the Wi-Fi's files).  Each test plants
what the service could (a symbolic link at the name root reads or writes, a
hard link, a link in place of the folder) and checks that no file outside
changes, and that root reads nothing through it (appliance/root/safefs.py)."""

from __future__ import annotations

import json
import os

import pytest

from appliance import owner, setup, wifi
from appliance.root import owner as owners
from appliance.root import safefs
from appliance.root import setup_apply as setup_root
from companion import durable
from test_setup_mode import FakeNM, _key


@pytest.fixture
def folders(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    data.mkdir()
    outside.mkdir()
    secret = outside / "shadow"
    secret.write_text("root:$6$secret:19000:0:99999:7:::\n")
    return data, outside, secret


def test_a_planted_link_at_a_name_root_writes_is_replaced_never_followed(folders):
    data, outside, secret = folders
    for name in (setup.SYSTEM_STATUS, setup.STATUS, setup.NETWORKS, wifi.STATUS_FILE, wifi.PASSWORD_FILE):
        (data / name).symlink_to(secret)
    setup_root.write_status(data, state="failed", reason="failed")
    setup_root.write_networks(data, [{"ssid": "home", "signal": 50, "secured": True}])
    wifi.write_status(data, wifi.Status(mode="join", reason="a known network"))
    setup_root._write_status(data, {"ssh": "refused"})
    drawn = wifi.box_password(data)
    assert secret.read_text() == "root:$6$secret:19000:0:99999:7:::\n"
    for name in (setup.SYSTEM_STATUS, setup.STATUS, setup.NETWORKS, wifi.STATUS_FILE, wifi.PASSWORD_FILE):
        assert not (data / name).is_symlink(), name
    assert (data / wifi.PASSWORD_FILE).read_text().strip() == drawn
    assert "secret" not in drawn, "root read nothing through the link"


def test_a_link_at_a_temporary_name_is_never_written_through(folders, monkeypatch):
    data, outside, secret = folders
    # The old fixed names, and the name root would draw next.
    (data / f"{wifi.STATUS_FILE}.tmp").symlink_to(secret)
    monkeypatch.setattr(durable.secrets, "token_hex", lambda n: "predictable")
    (data / f".{wifi.STATUS_FILE}.predictable.tmp").symlink_to(secret)
    with pytest.raises(FileExistsError):
        wifi.write_status(data, wifi.Status(mode="join", reason="a known network"))
    assert secret.read_text() == "root:$6$secret:19000:0:99999:7:::\n"


def test_requests_that_are_links_or_hard_links_are_not_read(folders, tmp_path):
    data, outside, secret = folders
    root = tmp_path / "owner"
    owners.set_setup_open(root, True)
    request = outside / "request.json"
    request.write_text(json.dumps({"ssh_key": _key(), "owner_password": "the attacker's", "done": True}))
    (data / setup.SYSTEM_REQUEST).symlink_to(request)
    nm, ssh, sshd = FakeNM(), tmp_path / "ssh", tmp_path / "sshd"
    status = setup_root.apply_system(data, nm, ssh_dir=ssh, sshd_dir=sshd, owner_dir=root)
    assert "ssh" not in status and not (ssh / "authorized_keys").exists() and owners.owner_hash(root) is None
    assert request.exists(), "the link removed, not what it points at"
    os.link(request, data / setup.SYSTEM_REQUEST)            # a second name: not root's to read
    status = setup_root.apply_system(data, nm, ssh_dir=ssh, sshd_dir=sshd, owner_dir=root)
    assert not (ssh / "authorized_keys").exists() and owners.owner_hash(root) is None
    assert setup.read_json(data / setup.SYSTEM_REQUEST) is None


def test_a_folder_replaced_by_a_link_is_not_entered(folders):
    data, outside, secret = folders
    (data / "update").symlink_to(outside)
    assert safefs.read_file(data / "update", "shadow") is None
    with pytest.raises(OSError):
        safefs.write_file(data / "update", "shadow", b"owned")
    assert secret.read_text() == "root:$6$secret:19000:0:99999:7:::\n"


def test_the_settings_root_reads_follow_no_link(folders):
    from companion import config as cfg

    data, outside, secret = folders
    (outside / "companion.toml").write_text('wifi = "own"\nwifi_ssid = "attacker"\n')
    (data / "companion.toml").symlink_to(outside / "companion.toml")
    read = lambda path: safefs.read_file(path.parent, path.name)      # noqa: E731  (root's reader)
    assert cfg.load(data, read=read).get("wifi_ssid") != "attacker"
    assert cfg.load(data).get("wifi_ssid") == "attacker", "the service's own reader follows its own link"


def test_the_owner_record_the_service_plants_does_not_move_root(folders, tmp_path):
    data, outside, secret = folders
    owner.write_hash(data, owner.hash_password("the attacker's"))
    root = tmp_path / "owner"
    assert not owners.verifies("the attacker's", root)
    assert not owners.make_owner("the attacker's", root), "no record: set-up closed for root"
