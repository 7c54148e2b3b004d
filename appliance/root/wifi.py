"""The box's own Wi-Fi: the system side (issue 23), ``companion wifi``.

Runs as root in its own unit (``systemd/companion-wifi.service``), apart from
the companion's hardened service, which needs no privilege for it.  At the
start it decides (:func:`appliance.wifi.decide`): with ``wifi = "auto"`` it
waits up to ``wifi_wait_s`` for the radio to reach a network the system
knows; if one comes, it does nothing at all and the box is exactly as it
was before this feature.  Otherwise (or with ``wifi = "own"``) it raises the
box's own access point:

* where NetworkManager runs (Raspberry Pi OS bookworm): a shared-mode
  access-point connection, ``companion-hotspot`` (never autoconnected, so the
  next start joins the home network again), with NetworkManager's own dnsmasq
  told to answer every name with the box;
* elsewhere: ``hostapd`` and ``dnsmasq``, run here in the foreground with
  configurations generated in ``/run/companion-wifi``.

In both, WPA2 (CCMP) with the per-box password, the box at 10.42.0.1, DHCP
for phones, every DNS name answered with the box, and port 80 on the radio
redirected to the box's web port (so phones' connectivity probes reach
web/portal.py).  (Not DHCP's option 114, RFC 8910: it names a captive-portal
*API* that must be HTTPS and answer JSON; the probes are enough.)  No route anywhere:
no internet.  Then it writes ``wifi.json`` for the box and the web, and
waits; stopped (SIGTERM), it takes everything down again.

The argument lists and configuration texts are plain functions, tested
without a radio (tests/core/test_own_wifi.py); the VM test raises a real one
(tests/vm/wifi_check.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from appliance import setup
from appliance import wifi as core
from companion import config as cfg
from companion import durable

from . import owner as owners
from . import safefs
from . import setup_apply as setup_root

log = logging.getLogger("hardware.wifi")

CONNECTION = "companion-hotspot"
RUN_DIR = Path("/run/companion-wifi")
NM_DNSMASQ_DIR = Path("/etc/NetworkManager/dnsmasq-shared.d")
NM_DNSMASQ_FILE = "companion-portal.conf"
NFT_TABLE = "companion_portal"
SYS_NET = Path("/sys/class/net")


# -- pure: what to run and what to write ---------------------------------------------

def portal_url(port: int) -> str:
    return f"http://{core.ADDRESS}:{port}/"


def nm_commands(ifname: str, ssid: str, password: str, channel: int = 6) -> list[list[str]]:
    """nmcli's argument lists: the access-point connection, made afresh, then up.
    (The password is on nmcli's command line for a moment: root's process, and
    the same password is on the box's screen for the table anyway.)

    The channel is fixed (``core.CHANNELS``: NetworkManager's own pick can be
    13, where an access point may not send), and protected management frames
    are off: NetworkManager then offers plain WPA2-PSK, the network the QR
    code names, instead of a WPA2/WPA3 mix that some drivers and older phones
    fail on."""
    return [
        ["nmcli", "connection", "delete", CONNECTION],              # may fail: none yet
        ["nmcli", "connection", "add", "type", "wifi", "ifname", ifname, "con-name", CONNECTION,
         "autoconnect", "no", "ssid", ssid,
         "802-11-wireless.mode", "ap", "802-11-wireless.band", "bg",
         "802-11-wireless.channel", str(channel), "wifi-sec.pmf", "disable",
         "ipv4.method", "shared", "ipv4.addresses", f"{core.ADDRESS}/{core.PREFIX}",
         "ipv6.method", "disabled",
         "wifi-sec.key-mgmt", "wpa-psk", "wifi-sec.proto", "rsn",
         "wifi-sec.pairwise", "ccmp", "wifi-sec.group", "ccmp", "wifi-sec.psk", password],
        ["nmcli", "--wait", "30", "connection", "up", CONNECTION],
    ]


def nm_down_commands() -> list[list[str]]:
    return [["nmcli", "connection", "down", CONNECTION], ["nmcli", "connection", "delete", CONNECTION]]


def dns_lines(port: int) -> list[str]:
    """dnsmasq lines shared by both paths: every name is the box."""
    return [f"address=/#/{core.ADDRESS}"]


def dnsmasq_conf(ifname: str, port: int, leases: Path) -> str:
    """hostapd's companion: DHCP and a DNS that knows one address, the box's."""
    first, last = core.DHCP_RANGE
    lines = [
        "# made by companion wifi (appliance/root/wifi.py) at each start",
        f"interface={ifname}",
        "bind-interfaces",
        f"listen-address={core.ADDRESS}",
        "no-resolv",                 # no upstream: no internet to resolve for
        "no-hosts",
        "no-poll",
        f"dhcp-range={first},{last},255.255.255.0,12h",
        f"dhcp-option=option:router,{core.ADDRESS}",
        f"dhcp-option=option:dns-server,{core.ADDRESS}",
        "dhcp-authoritative",
        f"dhcp-leasefile={leases}",
        *dns_lines(port),
    ]
    return "\n".join(lines) + "\n"


def hostapd_conf(ifname: str, ssid: str, password: str, country: str | None = None,
                 channel: int = 6) -> str:
    """WPA2-PSK with CCMP only.  The name goes as hex (``ssid2``), so any
    UTF-8 name works; the passphrase is printable ASCII (checked) and taken
    to the end of its line."""
    core.check_password(password)
    lines = [
        "# made by companion wifi (appliance/root/wifi.py) at each start",
        f"interface={ifname}",
        "driver=nl80211",
        f"ssid2={ssid.encode('utf-8').hex()}",
        "hw_mode=g",
        f"channel={channel}",
        "auth_algs=1",
        "ignore_broadcast_ssid=0",
        "wpa=2",
        "wpa_key_mgmt=WPA-PSK",
        "rsn_pairwise=CCMP",
        f"wpa_passphrase={password}",
    ]
    if country:
        lines += [f"country_code={country}", "ieee80211d=1"]
    return "\n".join(lines) + "\n"


def nft_ruleset(ifname: str, port: int) -> str:
    """Port 80 on the radio goes to the box's web port: phones probe
    ``http://<any name>/...`` on port 80, and DNS says every name is the box."""
    return (f"table ip {NFT_TABLE} {{\n"
            f"  chain prerouting {{\n"
            f"    type nat hook prerouting priority dstnat; policy accept;\n"
            f'    iifname "{ifname}" tcp dport 80 redirect to :{port}\n'
            f"  }}\n"
            f"}}\n")


def iptables_rule(ifname: str, port: int, action: str = "-A") -> list[str]:
    return ["iptables", "-t", "nat", action, "PREROUTING", "-i", ifname, "-p", "tcp",
            "--dport", "80", "-j", "REDIRECT", "--to-ports", str(port)]


# -- the system: what is there ----------------------------------------------------------

class System:
    """The commands this module runs; tests give a fake."""

    def run(self, argv: list[str], *, input: str | None = None, timeout: float = 60) -> tuple[int, str]:
        try:
            res = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 127, str(exc)
        return res.returncode, (res.stdout or "") + (res.stderr or "")

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def spawn(self, argv: list[str]) -> subprocess.Popen:
        return subprocess.Popen(argv)


def find_radio(sys_net: Path = SYS_NET) -> str | None:
    """The first Wi-Fi interface (one with a ``phy80211`` link or ``wireless`` folder)."""
    try:
        names = sorted(p.name for p in sys_net.iterdir())
    except OSError:
        return None
    for name in names:
        if (sys_net / name / "phy80211").exists() or (sys_net / name / "wireless").exists():
            return name
    return None


def radio_joined(ifname: str, system: System, sys_net: Path = SYS_NET) -> bool:
    """The radio is on a network: associated (operstate "up") with an IPv4 address."""
    try:
        state = (sys_net / ifname / "operstate").read_text().strip()
    except OSError:
        return False
    if state != "up":
        return False
    rc, out = system.run(["ip", "-4", "-o", "addr", "show", "dev", ifname], timeout=10)
    return rc == 0 and " inet " in f" {out}"


#: NetworkManager's device states (``GENERAL.STATE``): from 30 ("disconnected")
#: up, the radio is NetworkManager's and ready to take a connection; below it
#: (10 unmanaged, 20 unavailable: its wpa_supplicant not yet there) an
#: activation waits, and ``nmcli --wait`` may give up on it.
NM_READY = 30


def nm_radio_state(ifname: str, system: System) -> int:
    rc, out = system.run(["nmcli", "-g", "GENERAL.STATE", "device", "show", ifname], timeout=15)
    try:
        return int(out.split()[0]) if rc == 0 else 0
    except (IndexError, ValueError):
        return 0


def wait_nm_radio(ifname: str, system: System, wait_s: float = 30.0, *, clock=time.monotonic,
                  sleep=time.sleep) -> int:
    """Wait until NetworkManager has the radio ready (a radio that just
    appeared, or a supplicant still starting); its last state."""
    end = clock() + wait_s
    while True:
        state = nm_radio_state(ifname, system)
        if state >= NM_READY or clock() >= end:
            return state
        sleep(0.5)


def networkmanager_runs(system: System) -> bool:
    if not system.which("nmcli"):
        return False
    rc, out = system.run(["nmcli", "-t", "-f", "RUNNING", "general"], timeout=15)
    return rc == 0 and out.strip().startswith("running")


def wait_for_known_network(ifname: str, wait_s: float, system: System, *, sys_net: Path = SYS_NET,
                           clock=time.monotonic, sleep=time.sleep, stop: threading.Event | None = None) -> bool:
    end = clock() + wait_s
    while True:
        if radio_joined(ifname, system, sys_net):
            return True
        if clock() >= end or (stop is not None and stop.is_set()):
            return False
        sleep(1.0)


# -- up and down ----------------------------------------------------------------------------------

class AccessPoint:
    """The box's own network, raised by one of the two paths; ``down()`` undoes it."""

    def __init__(self, ifname: str, settings: core.Settings, password: str, system: System,
                 run_dir: Path | None = None, nm_dnsmasq_dir: Path | None = None):
        self.ifname, self.settings, self.password, self.system = ifname, settings, password, system
        self.run_dir = run_dir or RUN_DIR
        self.nm_dnsmasq_dir = nm_dnsmasq_dir or NM_DNSMASQ_DIR
        self.backend: str | None = None
        self.children: list[subprocess.Popen] = []
        self.redirect: str | None = None
        self.unmanaged = False
        self.sleep = time.sleep

    def up(self) -> str:
        backend = self.settings.backend
        if backend == "networkmanager" or (backend == "auto" and networkmanager_runs(self.system)):
            self._up_networkmanager()
        else:
            self._up_hostapd()
        self._redirect_port_80()
        return self.backend

    def _must(self, argv, **kw) -> str:
        rc, out = self.system.run(argv, **kw)
        if rc != 0:
            raise RuntimeError(f"{' '.join(argv[:4])}...: exit {rc}: {out.strip()[-300:]}")
        return out

    def _up_networkmanager(self) -> None:
        self.backend = "networkmanager"
        self.nm_dnsmasq_dir.mkdir(parents=True, exist_ok=True)
        conf = "# made by companion wifi (appliance/root/wifi.py); removed when it stops\n"
        conf += "\n".join(dns_lines(self.settings.port)) + "\n"
        durable.write_text(self.nm_dnsmasq_dir / NM_DNSMASQ_FILE, conf)
        delete, add, up = nm_commands(self.ifname, self.settings.ssid, self.password, self.settings.channel)
        self.system.run(delete, timeout=30)
        self._must(add, timeout=30)
        state = wait_nm_radio(self.ifname, self.system, sleep=self.sleep)
        if state < NM_READY:
            log.warning("wifi: NetworkManager has not made %s ready (state %s); trying all the same",
                        self.ifname, state)
        # Once more if the first activation fails (NetworkManager gives up on
        # one it cannot start in time): seconds, where a restart of the unit
        # by systemd would cost the table RestartSec and the wait again.
        rc, out = self.system.run(up, timeout=60)
        if rc != 0:
            log.warning("wifi: the access point did not come up (%s); once more", out.strip()[-200:])
            self.sleep(2.0)
            self._must(up, timeout=60)

    def _up_hostapd(self) -> None:
        self.backend = "hostapd"
        for tool in ("hostapd", "dnsmasq", "ip"):
            if not self.system.which(tool):
                raise RuntimeError(f"{tool} is not installed (apt-get install hostapd dnsmasq-base)")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.run_dir, 0o700)             # the passphrase is in there
        hostapd = self.run_dir / "hostapd.conf"
        dnsmasq = self.run_dir / "dnsmasq.conf"
        durable.write_text(hostapd, hostapd_conf(self.ifname, self.settings.ssid, self.password, self.settings.country,
                                                 channel=self.settings.channel), mode=0o600)
        durable.write_text(dnsmasq, dnsmasq_conf(self.ifname, self.settings.port, self.run_dir / "dnsmasq.leases"))
        # A client on this radio would fight the access point.
        if networkmanager_runs(self.system):      # wifi_backend = "hostapd" beside NetworkManager
            self.system.run(["nmcli", "device", "set", self.ifname, "managed", "no"], timeout=15)
            self.unmanaged = True
        elif self.system.which("wpa_cli"):        # ifupdown's wpa_supplicant for this radio alone
            self.system.run(["wpa_cli", "-i", self.ifname, "terminate"], timeout=10)
        self._must(["ip", "link", "set", self.ifname, "up"])
        self._must(["ip", "addr", "flush", "dev", self.ifname])
        self._must(["ip", "addr", "add", f"{core.ADDRESS}/{core.PREFIX}", "dev", self.ifname])
        self.children.append(self.system.spawn(["hostapd", str(hostapd)]))
        self.children.append(self.system.spawn(["dnsmasq", "--keep-in-foreground", f"--conf-file={dnsmasq}",
                                                f"--pid-file={self.run_dir / 'dnsmasq.pid'}"]))

    def _redirect_port_80(self) -> None:
        port = self.settings.port
        if port == 80:
            return
        if self.system.which("nft"):
            self.system.run(["nft", "delete", "table", "ip", NFT_TABLE], timeout=10)
            rc, out = self.system.run(["nft", "-f", "-"], input=nft_ruleset(self.ifname, port), timeout=10)
            if rc == 0:
                self.redirect = "nft"
                return
            log.warning("wifi: nft refused the port-80 redirect: %s", out.strip()[-200:])
        if self.system.which("iptables"):
            rc, out = self.system.run(iptables_rule(self.ifname, port), timeout=10)
            if rc == 0:
                self.redirect = "iptables"
                return
        log.warning("wifi: no nft or iptables: phones' captive-portal probes on port 80 go unanswered "
                    "(DHCP still names the portal, %s)", portal_url(port))

    def alive(self) -> bool:
        return all(child.poll() is None for child in self.children)

    def down(self) -> None:
        if self.redirect == "nft":
            self.system.run(["nft", "delete", "table", "ip", NFT_TABLE], timeout=10)
        elif self.redirect == "iptables":
            self.system.run(iptables_rule(self.ifname, self.settings.port, "-D"), timeout=10)
        if self.backend == "networkmanager":
            for argv in nm_down_commands():
                self.system.run(argv, timeout=30)
            try:
                durable.remove(self.nm_dnsmasq_dir / NM_DNSMASQ_FILE)
            except OSError as exc:
                log.warning("wifi: %s stays: %s", NM_DNSMASQ_FILE, exc)
        for child in self.children:
            if child.poll() is None:
                child.terminate()
        for child in self.children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
        if self.backend == "hostapd":
            self.system.run(["ip", "addr", "flush", "dev", self.ifname], timeout=10)
        if self.unmanaged:
            self.system.run(["nmcli", "device", "set", self.ifname, "managed", "yes"], timeout=15)


# -- the command ----------------------------------------------------------------------------------

def main(data_dir: Path, config: dict, system: System | None = None, stop: threading.Event | None = None,
         owner_dir: Path = owners.ROOT_DIR) -> int:
    """``companion wifi``: decide, raise the box's network if needed, write
    ``wifi.json``, wait for SIGTERM, take it down.  Exit 0 when the box
    joins (nothing to do), 1 when raising failed (systemd may try again)."""
    system = system or System()
    stop = stop or threading.Event()
    try:
        settings = core.settings(config)
    except core.WifiSettingError as exc:
        print(f"companion wifi: {exc}", file=sys.stderr)
        return 2
    radio = find_radio(SYS_NET)
    # Set-up mode: the box raises its own network whatever the setting,
    # since a phone is how it gets its settings.  Root's own record says
    # so (appliance/root/owner.py), never the service's folder: what the
    # service writes cannot make root take join requests.
    setup_mode = owners.setup_open(owner_dir)
    mode = "own" if setup_mode else settings.mode
    if mode != "join" and radio and mode == "auto":
        log.info("wifi: waiting up to %.0f s for %s to join a known network", settings.wait_s, radio)
    joined = (mode == "auto" and radio is not None
              and wait_for_known_network(radio, settings.wait_s, system, sys_net=SYS_NET, stop=stop))
    decision = core.decide(mode, has_radio=radio is not None, joined=joined)
    if decision == "join":
        reason = ("no Wi-Fi radio" if radio is None else "the setting" if settings.mode == "join"
                  else "a known network")
        core.write_status(data_dir, core.Status(mode="join", reason=reason))
        print(f"companion wifi: the box uses the system's network ({reason})", flush=True)
        return 0
    password = core.box_password(data_dir, settings.password)
    if not core.fits_panel_qr(settings.ssid, password):
        # Still a good network; only the one scan is lost: the Phones screen
        # then spells the name and password out to be typed.
        print(f"companion wifi: the network's name and password are too long for the box's QR code "
              f"(at most {core.QR_BYTES - len(core.wifi_qr_payload('', ''))} bytes together): "
              "phones will have to type them; shorten wifi_ssid or wifi_password", file=sys.stderr, flush=True)
    if setup_mode and networkmanager_runs(system):
        # What the Setup page offers to join: seen now, while the radio is
        # still free to scan (once NetworkManager has it: at boot it may not yet).
        wait_nm_radio(radio, system)
        setup_root.write_networks(data_dir, setup_root.scan(radio, system))
    reason = "set-up" if setup_mode else "the setting" if settings.mode == "own" else "no known network"
    ap = raise_own(data_dir, radio, settings, password, system, reason)
    if ap is None:
        return 1

    def on_signal(signum, frame):
        stop.set()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    rc = 0
    while not stop.wait(2.0):
        if setup_mode:
            request = setup_root.take_join_request(data_dir)
            if request is not None:
                ap, done = setup_join(data_dir, radio, settings, password, system, ap, request, owner_dir)
                if done:
                    return 0
                if ap is None:
                    return 1
        if not ap.alive():
            print("companion wifi: hostapd or dnsmasq stopped", file=sys.stderr, flush=True)
            rc = 1
            break
    ap.down()
    core.clear_status(data_dir)
    return rc


def raise_own(data_dir: Path, radio: str, settings: core.Settings, password: str, system: System,
              reason: str) -> AccessPoint | None:
    """The box's own network up and ``wifi.json`` saying so, or None."""
    ap = AccessPoint(radio, settings, password, system)
    try:
        backend = ap.up()
    except Exception as exc:
        ap.down()
        core.write_status(data_dir, core.Status(mode="join", reason=f"raising the access point failed: {exc}"))
        print(f"companion wifi: could not raise the box's own network: {exc}", file=sys.stderr, flush=True)
        return None
    core.write_status(data_dir, core.Status(mode="own", ssid=settings.ssid, password=password,
                                            address=core.ADDRESS, backend=backend, reason=reason))
    print(f"companion wifi: the box's own network '{settings.ssid}' is up on {radio} ({backend}); "
          f"phones join it and open {portal_url(settings.port)}", flush=True)
    return ap


def setup_join(data_dir: Path, radio: str, settings: core.Settings, password: str, system: System,
               ap: AccessPoint, request, owner_dir: Path = owners.ROOT_DIR) -> tuple[AccessPoint | None, bool]:
    """A join asked by the Setup page: (the access point now, joined?).
    Joined: the box's own network stays down, set-up is done.  Failed: it is
    raised again, and the status says why."""
    if isinstance(request, setup.SetupError):
        setup_root.write_status(data_dir, state="failed", reason="failed", detail=str(request))
        return ap, False
    if not setup_root.join_allowed(request, owner_dir):
        setup_root.write_status(data_dir, state="failed", ssid=request["ssid"], reason="failed",
                                detail="the owner password is needed")
        return ap, False
    if ap.backend != "networkmanager":
        # hostapd's path has no client to join with: the request cannot work here.
        setup_root.write_status(data_dir, state="failed", ssid=request["ssid"], reason="failed",
                                detail="joining a network needs NetworkManager")
        return ap, False
    setup_root.write_status(data_dir, state="joining", ssid=request["ssid"])
    print(f"companion wifi: set-up: trying the network {request['ssid']!r}", flush=True)
    ap.down()
    outcome = setup_root.join(radio, request, system)
    if outcome["state"] == "joined":
        setup_root.write_status(data_dir, **outcome, port=settings.port)
        core.write_status(data_dir, core.Status(mode="join", reason="set up from a phone"))
        setup.mark_done(data_dir)
        owners.close_setup(owner_dir)          # a house Wi-Fi joined ends set-up, for root too
        print(f"companion wifi: set-up: joined {request['ssid']!r} at {outcome['address']}", flush=True)
        return ap, True
    if networkmanager_runs(system):
        setup_root.write_networks(data_dir, setup_root.scan(radio, system))
    ap = raise_own(data_dir, radio, settings, password, system, "set-up")
    setup_root.write_status(data_dir, **outcome, back_within_s=setup.BACK_WITHIN_S)
    return ap, False


def command(args) -> int:
    """``companion wifi``: run by companion-wifi.service, as root."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    # companion.toml is the service's file: read without following a link.
    return main(data_dir, cfg.load(data_dir, args.config,
                                   read=lambda path: safefs.read_file(path.parent, path.name)))
