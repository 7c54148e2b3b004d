"""``appliance-vm --wifi``: the box's own Wi-Fi, end to end (issue 23).

The interface is in README.md: ``check(vm, say) -> dict``.  In the guest:

1. the kernel's simulated radios (``mac80211_hwsim radios=2``); the second
   one is the phone's, moved into a network namespace of its own
   (``iw phy … set netns name phone``), so the box sees one radio and the
   phone reaches the box only through the air;
2. the box set to ``wifi = "auto"`` with a short wait and its Wi-Fi unit
   restarted: no known network comes, so it raises its own (in this image
   through NetworkManager, as on Raspberry Pi OS);
3. the box's own frame, fetched from its mirror (``/oled.png``) and read by
   a real QR decoder on the host (``zbarimg``): the phone's ``wpa_supplicant``
   is configured from that text ONLY (name and password);
4. in the phone's namespace: association, DHCP (``dhclient``, its DNS
   server from the lease), then what a phone's system does after joining:
   the captive-portal probes by name, each followed to where it leads (it
   must be the scoreboard), and ``/api/state`` (it must be the box's).

The result goes under ``"wifi"`` in the harness's JSON summary.  Standard
library only (the harness runs with the host's ``python3``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from companion.wifi import parse_wifi_qr  # noqa: E402  (pure, standard library only)

TOML = "/var/lib/companion/companion.toml"
LIMIT_S = 20.0

# Run with the guest's python3 inside the phone's namespace: what a phone's
# system asks after joining, names resolved by the DNS server DHCP gave.
PHONE = r'''
import json, sys, time, urllib.request, urllib.error
PROBES = [("android", "http://connectivitycheck.gstatic.com/generate_204"),
          ("apple", "http://captive.apple.com/hotspot-detect.html"),
          ("windows", "http://www.msftconnecttest.com/connecttest.txt"),
          ("firefox", "http://detectportal.firefox.com/canonical.html")]
out = {"probes": {}}
for name, url in PROBES:
    t = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=15) as r:       # follows the redirect, as a portal window does
            body = r.read().decode("utf-8", "replace")
            out["probes"][name] = {"status": r.status, "final": r.url, "scoreboard": "page-board" in body,
                                   "s": round(time.monotonic() - t, 2)}
    except Exception as exc:
        out["probes"][name] = {"error": f"{type(exc).__name__}: {exc}"}
    if name == "android":
        out["first_scoreboard_at"] = time.time()
final = out["probes"].get("android", {}).get("final") or "http://10.42.0.1:8000/"
try:
    with urllib.request.urlopen(final.rstrip("/") + "/api/state", timeout=15) as r:
        out["state"] = json.loads(r.read())
except Exception as exc:
    out["state_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
'''


def wpa_conf(ssid: str, password: str) -> str:
    """The phone's network, from the QR code's fields only: the name as hex,
    the key derived from the passphrase (no quoting of either to get wrong)."""
    psk = hashlib.pbkdf2_hmac("sha1", password.encode(), ssid.encode(), 4096, 32).hex()
    return ("ctrl_interface=/run/wpa_supplicant_phone\n"
            "network={\n"
            f"  ssid={ssid.encode().hex()}\n"
            f"  psk={psk}\n"
            "  key_mgmt=WPA-PSK\n  proto=RSN\n  pairwise=CCMP\n  scan_ssid=1\n"
            "}\n")


def decode_qr(png: bytes) -> list[str]:
    res = subprocess.run(["zbarimg", "--raw", "-q", "-Sdisable", "-Sqrcode.enable", "-"], input=png,
                         capture_output=True, timeout=60)
    return [line for line in res.stdout.decode("utf-8", "replace").splitlines() if line]


def check(vm, say) -> dict:
    result = {"qr": None, "joined": False, "portal_lands_on_scoreboard": False, "state_ok": False,
              "scan_to_scoreboard_s": None, "ok": False}
    if not shutil.which("zbarimg"):
        raise RuntimeError("zbarimg is missing on the host (apt-get install zbar-tools)")

    # 1. Two simulated radios; the phone's goes into its own namespace.
    vm.must("modprobe mac80211_hwsim radios=2")
    phys = sorted(vm.must("ls /sys/class/ieee80211").split())
    if len(phys) < 2:
        raise RuntimeError(f"mac80211_hwsim gave {phys}")
    phone_phy = phys[-1]
    vm.must(f"ip netns add phone && iw phy {phone_phy} set netns name phone && "
            "ip netns exec phone ip link set lo up && mkdir -p /etc/netns/phone && "
            ": > /etc/netns/phone/resolv.conf")
    phone_if = vm.must("ip netns exec phone ls /sys/class/net | grep -v '^lo$' | head -1").strip()
    box_if = vm.must("ls /sys/class/net | while read n; do [ -e /sys/class/net/$n/phy80211 ] && echo $n; done").strip()
    say(f"wifi: radios {phys}: the box's {box_if}, the phone's {phone_if} (namespace 'phone')")

    # 2. The box: auto, a short wait; no known network comes.
    old = vm.sh(f"cat {TOML} 2>/dev/null").stdout
    vm.put(TOML, (old + '\nwifi = "auto"\nwifi_wait_s = 5\n').encode(), mode=0o600)
    vm.must(f"chown companion:companion {TOML} && systemctl restart companion-wifi")
    t_raise = time.monotonic()

    # 3. The QR code from the box's own frame, through its mirror.
    text, end = None, time.monotonic() + 180
    while time.monotonic() < end and text is None:
        status, png = vm.http("GET", "/oled.png?scale=4", timeout=20)
        if status == 200:
            text = next((t for t in decode_qr(png) if t.startswith("WIFI:")), None)
        if text is None:
            time.sleep(1)
    if text is None:
        log = vm.sh("journalctl -b -u companion-wifi -u NetworkManager --no-pager | tail -40").stdout
        raise RuntimeError(f"no Wi-Fi QR code on the box's mirror within 180 s:\n{log[-2500:]}")
    scanned = time.monotonic()
    result["qr"] = text
    result["raise_to_qr_s"] = round(scanned - t_raise, 1)
    fields = parse_wifi_qr(text)
    say(f"wifi: the box's frame shows {text!r} ({scanned - t_raise:.1f} s after the unit's restart)")
    if fields.get("T") != "WPA" or not fields.get("S") or not fields.get("P"):
        raise RuntimeError(f"the QR code is not a WPA network: {fields}")

    # 4. The phone: join from the QR code alone, DHCP, then as a phone's system does.
    vm.put("/root/phone-wpa.conf", wpa_conf(fields["S"], fields["P"]).encode(), mode=0o600)
    vm.put("/root/phone.py", PHONE.encode())
    vm.must(f"ip netns exec phone wpa_supplicant -B -i {phone_if} -c /root/phone-wpa.conf -P /run/phone-wpa.pid")
    end = time.monotonic() + 60
    while time.monotonic() < end:
        state = vm.sh(f"ip netns exec phone wpa_cli -p /run/wpa_supplicant_phone -i {phone_if} status").stdout
        if "wpa_state=COMPLETED" in state:
            result["joined"] = True
            break
        time.sleep(0.3)
    result["join_s"] = round(time.monotonic() - scanned, 1)
    if not result["joined"]:
        raise RuntimeError(f"the phone did not join within 60 s: {state[-400:]}")
    dhcp = vm.sh(f"ip netns exec phone dhclient -1 -v -pf /run/phone-dhclient.pid "
                 f"-lf /run/phone-dhclient.leases {phone_if}", timeout=90)
    address = vm.sh(f"ip netns exec phone ip -4 -o addr show dev {phone_if}").stdout
    # The DNS server the lease names (dhclient-script cannot replace the
    # namespace's bind-mounted resolv.conf itself).
    leases = vm.sh("cat /run/phone-dhclient.leases").stdout
    servers = [line.split()[-1].rstrip(";").split(",")[0] for line in leases.splitlines()
               if "option domain-name-servers" in line]
    if servers:
        vm.put("/etc/netns/phone/resolv.conf", f"nameserver {servers[-1]}\n".encode())
    resolv = vm.sh("cat /etc/netns/phone/resolv.conf").stdout
    result["dhcp_s"] = round(time.monotonic() - scanned, 1)
    say(f"wifi: the phone joined in {result['join_s']} s; DHCP: {address.split()[3] if address else None}, "
        f"DNS {resolv.split()[-1:] if resolv else None}")
    if " inet " not in f" {address}":
        raise RuntimeError(f"no DHCP address: {dhcp.stderr[-600:]}")
    run = vm.sh("ip netns exec phone python3 /root/phone.py", timeout=120)
    done = time.monotonic()
    if not run.ok:
        raise RuntimeError(f"the phone's probes failed: {run.stderr[-800:]}")
    phone = json.loads(run.stdout.strip().splitlines()[-1])
    result["probes"] = phone["probes"]
    landed = [p.get("scoreboard") and p.get("status") == 200 for p in phone["probes"].values()]
    result["portal_lands_on_scoreboard"] = bool(landed) and all(landed)
    status, body = vm.http("GET", "/api/state")
    box_state = json.loads(body) if status == 200 else None
    result["state_ok"] = box_state is not None and phone.get("state") == box_state
    if phone.get("state_error"):
        result["state_error"] = phone["state_error"]
    result["scan_to_scoreboard_s"] = round(done - scanned, 1)
    for name, probe in phone["probes"].items():
        say(f"wifi: probe {name}: {probe}")
    say(f"wifi: scan to scoreboard {result['scan_to_scoreboard_s']} s; /api/state from the phone "
        f"{'is' if result['state_ok'] else 'is NOT'} the box's")
    result["ok"] = bool(result["joined"] and result["portal_lands_on_scoreboard"] and result["state_ok"]
                        and result["scan_to_scoreboard_s"] < LIMIT_S)

    # The box as it was for the rest of the run: the phone gone, its own network down.
    vm.sh("kill $(cat /run/phone-wpa.pid /run/phone-dhclient.pid 2>/dev/null) 2>/dev/null; "
          "ip netns del phone; systemctl stop companion-wifi")
    vm.put(TOML, old.encode(), mode=0o600)
    vm.sh(f"chown companion:companion {TOML}")
    return result
