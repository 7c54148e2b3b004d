"""The box's own Wi-Fi (issue 23), without a radio, a panel or a page: the
decision, the settings, the generated configurations and argument lists
(with a ``FakeSystem``), the password kept between starts, the QR code's
text and its escaping, and the join address on the own network.

The panel's QR code screens (read back by zbar) and the captive portal's
answers under the Host rules are in tests/web/test_wifi.py; the radio
itself is raised in the VM: tests/vm/appliance-vm --wifi."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from appliance import setup, wifi
from appliance.root import wifi as system_wifi

# -- the decision: with a known network, nothing changes -------------------------------------


@pytest.mark.parametrize("mode, has_radio, joined, expected", [
    ("auto", True, True, "join"),          # a known network came: the box as before
    ("auto", True, False, "own"),          # none within the wait: its own
    ("auto", False, False, "join"),        # no radio: nothing to raise
    ("own", True, True, "own"),            # always, even with a known network
    ("own", False, False, "join"),
    ("join", True, False, "join"),         # never
])
def test_the_decision(mode, has_radio, joined, expected):
    assert wifi.decide(mode, has_radio=has_radio, joined=joined) == expected


def test_settings_default_to_auto_and_refuse_a_mode_that_is_not_one():
    assert wifi.settings({}).mode == "auto"
    from companion.config import DEFAULTS
    assert wifi.settings(dict(DEFAULTS)).mode == "auto"
    with pytest.raises(wifi.WifiSettingError, match="auto"):
        wifi.settings({"wifi": "sometimes"})
    with pytest.raises(wifi.WifiSettingError, match="8 to 63"):
        wifi.settings({"wifi_password": "short"})
    with pytest.raises(wifi.WifiSettingError, match="32 bytes"):
        wifi.settings({"wifi_ssid": "x" * 33})


@pytest.mark.parametrize("channel", [0, 12, 13, 14, "six", None])
def test_the_channel_is_one_every_country_allows(channel):
    assert wifi.settings({}).channel == 6
    assert wifi.settings({"wifi_channel": 11}).channel == 11
    with pytest.raises(wifi.WifiSettingError, match="1 to 11"):
        wifi.settings({"wifi_channel": channel})


@pytest.fixture(autouse=True)
def _a_box_that_was_set_up(monkeypatch):
    """These tests are about a box that has its settings: a data folder
    without a set-up record counts as set up here (set-up mode, where the
    box raises its own network whatever the setting: tests/core/test_setup_mode.py)."""
    real = setup.in_setup_mode
    monkeypatch.setattr(setup, "in_setup_mode",
                        lambda folder: bool(folder) and (Path(folder) / setup.RECORD).exists() and real(folder))


class FakeSystem(system_wifi.System):
    """Records what would run; answers as a system with or without NetworkManager."""

    def __init__(self, nm: bool, tools=("nmcli", "nft", "ip", "hostapd", "dnsmasq")):
        self.nm, self.tools, self.ran, self.spawned = nm, set(tools), [], []

    def run(self, argv, *, input=None, timeout=60):
        self.ran.append((list(argv), input))
        if argv[:4] == ["nmcli", "-t", "-f", "RUNNING"]:
            return (0, "running\n") if self.nm else (8, "not running")
        if argv[:3] == ["nmcli", "-g", "GENERAL.STATE"]:
            states = getattr(self, "radio_states", None)
            return 0, (states.pop(0) if states else "30 (disconnected)") + "\n"
        if argv[-2:] == ["up", system_wifi.CONNECTION] and getattr(self, "up_fails", 0):
            self.up_fails -= 1
            return 4, "Error: Connection activation failed: 802.1X supplicant took too long to authenticate"
        return 0, ""

    def which(self, name):
        return f"/usr/bin/{name}" if name in self.tools else None

    def spawn(self, argv):
        self.spawned.append(list(argv))

        class Child:
            def poll(self):
                return None

            def terminate(self):
                pass

            def wait(self, timeout=None):
                return 0
        return Child()


def _fake_radio(tmp_path, joined: bool):
    net = tmp_path / "net"
    (net / "wlan0" / "wireless").mkdir(parents=True)
    (net / "wlan0" / "operstate").write_text("up\n" if joined else "dormant\n")
    (net / "eth0").mkdir()
    return net


def test_auto_with_a_known_network_touches_nothing(tmp_path, monkeypatch):
    """The box as today: no command but looking, no password drawn, status "join"."""
    net = _fake_radio(tmp_path, joined=True)
    monkeypatch.setattr(system_wifi, "SYS_NET", net)
    monkeypatch.setattr(system_wifi, "find_radio", lambda sys_net=net: "wlan0")

    class Joined(FakeSystem):
        def run(self, argv, *, input=None, timeout=60):
            self.ran.append((list(argv), input))
            return 0, "3: wlan0    inet 192.168.1.20/24 brd 192.168.1.255 scope global wlan0\n"
    system = Joined(nm=True)
    data = tmp_path / "wifi-data"
    data.mkdir()
    rc = system_wifi.main(data, {"wifi": "auto", "wifi_wait_s": 5}, system=system)
    assert rc == 0
    assert [argv for argv, _ in system.ran] == [["ip", "-4", "-o", "addr", "show", "dev", "wlan0"]]
    assert not (data / wifi.PASSWORD_FILE).exists()
    assert wifi.read_status(data).mode == "join" and wifi.own_status(data) is None


def test_auto_without_a_known_network_waits_then_raises_its_own(tmp_path, monkeypatch):
    net = _fake_radio(tmp_path, joined=False)
    monkeypatch.setattr(system_wifi, "find_radio", lambda sys_net=None: "wlan0")
    slept = []
    now = [0.0]

    def sleep(s):
        slept.append(s)
        now[0] += s
    system = FakeSystem(nm=True)
    assert not system_wifi.wait_for_known_network("wlan0", 5, system, sys_net=net,
                                                  clock=lambda: now[0], sleep=sleep)
    assert sum(slept) == 5


def test_networkmanager_path_commands_and_status(tmp_path, monkeypatch):
    monkeypatch.setattr(system_wifi, "find_radio", lambda sys_net=None: "wlan0")
    monkeypatch.setattr(system_wifi, "NM_DNSMASQ_DIR", tmp_path / "nm")
    system = FakeSystem(nm=True)
    data = tmp_path / "wifi-data"
    data.mkdir()
    stop = threading.Event()
    done = []
    config = {"wifi": "own", "name": "companion", "wifi_ssid": "Table; 1", "port": 8000}
    worker = threading.Thread(target=lambda: done.append(system_wifi.main(data, config, system=system, stop=stop)))
    worker.start()
    try:
        for _ in range(500):
            if wifi.own_status(data):
                break
            threading.Event().wait(0.01)
        status = wifi.own_status(data)
        assert status is not None and status.ssid == "Table; 1" and status.address == wifi.ADDRESS
        password = (data / wifi.PASSWORD_FILE).read_text().strip()
        assert status.password == password and len(password) == wifi.PASSWORD_LENGTH
        assert (data / wifi.PASSWORD_FILE).stat().st_mode & 0o077 == 0
        ran = [argv for argv, _ in system.ran]
        add = next(a for a in ran if a[:3] == ["nmcli", "connection", "add"])
        pairs = dict(zip(add[3::2], add[4::2]))
        assert pairs["ssid"] == "Table; 1" and pairs["802-11-wireless.mode"] == "ap"
        assert pairs["ipv4.method"] == "shared" and pairs["autoconnect"] == "no"
        assert pairs["wifi-sec.key-mgmt"] == "wpa-psk" and pairs["wifi-sec.proto"] == "rsn"
        assert pairs["wifi-sec.psk"] == password
        # A channel every country allows (NetworkManager's own pick may be 13),
        # and plain WPA2 (no WPA3 mix): what the QR code's T:WPA names.
        assert pairs["802-11-wireless.channel"] == "6" and pairs["wifi-sec.pmf"] == "disable"
        assert ["nmcli", "--wait", "30", "connection", "up", system_wifi.CONNECTION] in ran
        nm_conf = (tmp_path / "nm" / system_wifi.NM_DNSMASQ_FILE).read_text()
        assert f"address=/#/{wifi.ADDRESS}" in nm_conf
        nft = [inp for argv, inp in system.ran if argv == ["nft", "-f", "-"]]
        assert nft and 'iifname "wlan0" tcp dport 80 redirect to :8000' in nft[0]
    finally:
        stop.set()
        worker.join(10)
    assert done == [0]
    ran = [argv for argv, _ in system.ran]
    assert ["nmcli", "connection", "down", system_wifi.CONNECTION] in ran
    assert ["nft", "delete", "table", "ip", system_wifi.NFT_TABLE] in ran
    assert wifi.read_status(data) is None, "stopped: the box is no longer on its own network"
    assert not (tmp_path / "nm" / system_wifi.NM_DNSMASQ_FILE).exists()


def test_networkmanager_gets_the_radio_ready_before_the_access_point_and_tries_twice(tmp_path):
    """A radio that just appeared is "unavailable" to NetworkManager for a
    moment: the activation waits for it, and one failed activation is tried
    again at once (not after a restart of the unit)."""
    system = FakeSystem(nm=True)
    system.radio_states = ["10 (unmanaged)", "20 (unavailable)", "20 (unavailable)", "30 (disconnected)"]
    system.up_fails = 1
    settings = wifi.settings({"wifi": "own"})
    ap = system_wifi.AccessPoint("wlan0", settings, "k7mxq2wv9pzt", system, nm_dnsmasq_dir=tmp_path / "nm")
    slept = []
    ap.sleep = slept.append
    assert ap.up() == "networkmanager"
    ran = [argv for argv, _ in system.ran]
    up = ["nmcli", "--wait", "30", "connection", "up", system_wifi.CONNECTION]
    asked = [i for i, a in enumerate(ran) if a[:3] == ["nmcli", "-g", "GENERAL.STATE"]]
    assert len(asked) == 4 and ran.index(up) > asked[-1], "up only once the radio is ready"
    assert ran.count(up) == 2 and system.up_fails == 0
    system.up_fails = 2                                  # twice: the unit fails (systemd restarts it)
    again = system_wifi.AccessPoint("wlan0", settings, "k7mxq2wv9pzt", system, nm_dnsmasq_dir=tmp_path / "nm")
    again.sleep = slept.append
    with pytest.raises(RuntimeError, match="exit 4"):
        again.up()


def test_a_name_too_long_for_the_qr_code_is_said_at_the_start(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(system_wifi, "find_radio", lambda sys_net=None: "wlan0")
    monkeypatch.setattr(system_wifi, "NM_DNSMASQ_DIR", tmp_path / "nm")
    stop = threading.Event()
    stop.set()                                  # up, then down at once
    config = {"wifi": "own", "wifi_ssid": "Le club de jeux de Marc-Antoine"}
    assert system_wifi.main(tmp_path, config, system=FakeSystem(nm=True), stop=stop) == 0
    assert "too long for the box's QR code" in capsys.readouterr().err
    config["wifi_ssid"] = "Le club"
    assert system_wifi.main(tmp_path, config, system=FakeSystem(nm=True), stop=stop) == 0
    assert "QR code" not in capsys.readouterr().err


def test_the_password_is_kept_between_starts_unless_a_setting_fixes_it(tmp_path):
    first = wifi.box_password(tmp_path)
    assert wifi.box_password(tmp_path) == first
    assert set(first) <= set(wifi.PASSWORD_ALPHABET)
    assert wifi.box_password(tmp_path, "fixed-password") == "fixed-password"
    (tmp_path / wifi.PASSWORD_FILE).write_text("short\n")          # damaged: drawn again
    assert wifi.box_password(tmp_path) != "short"


def test_hostapd_path_without_networkmanager(tmp_path, monkeypatch):
    system = FakeSystem(nm=False, tools=("ip", "hostapd", "dnsmasq", "iptables"))
    settings = wifi.settings({"wifi": "own", "wifi_ssid": "Café Table", "wifi_country": "fr", "wifi_channel": 1})
    ap = system_wifi.AccessPoint("wlan1", settings, "pass;word\\x", system, run_dir=tmp_path / "run")
    assert ap.up() == "hostapd"
    hostapd = (tmp_path / "run" / "hostapd.conf").read_text().splitlines()
    assert f"ssid2={'Café Table'.encode().hex()}" in hostapd
    assert "wpa=2" in hostapd and "rsn_pairwise=CCMP" in hostapd and "wpa_key_mgmt=WPA-PSK" in hostapd
    assert "wpa_passphrase=pass;word\\x" in hostapd and "country_code=FR" in hostapd
    assert "channel=1" in hostapd
    dnsmasq = (tmp_path / "run" / "dnsmasq.conf").read_text().splitlines()
    assert "interface=wlan1" in dnsmasq and f"address=/#/{wifi.ADDRESS}" in dnsmasq
    assert "no-resolv" in dnsmasq and f"dhcp-option=option:router,{wifi.ADDRESS}" in dnsmasq
    assert any(line.startswith("dhcp-range=10.42.0.10,10.42.0.250") for line in dnsmasq)
    ran = [argv for argv, _ in system.ran]
    assert ["ip", "addr", "add", f"{wifi.ADDRESS}/{wifi.PREFIX}", "dev", "wlan1"] in ran
    assert system_wifi.iptables_rule("wlan1", 8000) in ran          # no nft here: iptables
    assert [argv[0] for argv in system.spawned] == ["hostapd", "dnsmasq"]
    ap.down()
    assert system_wifi.iptables_rule("wlan1", 8000, "-D") in [argv for argv, _ in system.ran]


def test_hostapd_refuses_a_passphrase_wpa2_cannot_take():
    with pytest.raises(wifi.WifiSettingError):
        system_wifi.hostapd_conf("wlan0", "x", "line\nbreak!")


def test_hostapd_beside_networkmanager_takes_the_radio_from_it_and_gives_it_back(tmp_path):
    system = FakeSystem(nm=True)
    settings = wifi.settings({"wifi": "own", "wifi_backend": "hostapd"})
    ap = system_wifi.AccessPoint("wlan0", settings, "abcdefghjkmn", system, run_dir=tmp_path / "run")
    assert ap.up() == "hostapd"
    ran = [argv for argv, _ in system.ran]
    assert ["nmcli", "device", "set", "wlan0", "managed", "no"] in ran
    assert not any(argv[:3] == ["nmcli", "connection", "add"] for argv in ran)
    ap.down()
    assert ["nmcli", "device", "set", "wlan0", "managed", "yes"] in [argv for argv, _ in system.ran]
    with pytest.raises(wifi.WifiSettingError):
        wifi.settings({"wifi_backend": "iwd"})


def test_find_radio(tmp_path):
    net = _fake_radio(tmp_path, joined=False)
    assert system_wifi.find_radio(net) == "wlan0"
    shutil.rmtree(net / "wlan0")
    assert system_wifi.find_radio(net) is None


# -- the QR code's text -------------------------------------------------------------------------


@pytest.mark.parametrize("ssid, password", [
    ("companion-ab12", "abcdefghjkmn"),
    ('we;ird:"name",\\', 'p;a:s,s"w\\rd'),
    ("Café Zoë", "        "),
])
def test_the_wifi_payload_escapes_and_reads_back(ssid, password):
    text = wifi.wifi_qr_payload(ssid, password)
    assert text.startswith("WIFI:T:WPA;S:") and text.endswith(";;")
    fields = wifi.parse_wifi_qr(text)
    assert fields == {"T": "WPA", "S": ssid, "P": password}


def test_the_escaping_is_the_zxing_one():
    assert wifi.wifi_qr_payload("a;b", 'c:d"e,f\\') == 'WIFI:T:WPA;S:a\\;b;P:c\\:d\\"e\\,f\\\\;;'


# -- the join address ----------------------------------------------------------------------------


def _own(data, ssid="companion-7f3a", password="k7mxq2wv9pzt"):
    wifi.write_status(data, wifi.Status(mode="own", ssid=ssid, password=password,
                                        address=wifi.ADDRESS, backend="hostapd"))


def test_the_join_address_follows_the_own_network(tmp_path, monkeypatch):
    """The join URL (and the network watch) is the box's address on its
    own network while it runs one, else the address of its route out."""
    from appliance import netwatch as serve

    monkeypatch.setattr(serve, "lan_address", lambda: "192.168.1.20")
    data = tmp_path / "wifi-data"
    data.mkdir()
    config = {"data_dir": str(data)}
    assert serve.join_url("0.0.0.0", 8000, config) == "http://192.168.1.20:8000/"
    _own(data)
    assert serve.join_url("0.0.0.0", 8000, config) == f"http://{wifi.ADDRESS}:8000/"
    assert serve.join_url("127.0.0.1", 8000, config) == "http://127.0.0.1:8000/", "an explicit --host wins"
    wifi.clear_status(data)
    assert serve.box_address(config) == "192.168.1.20"
