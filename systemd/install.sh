#!/usr/bin/env bash
# Install the companion as a service on Raspberry Pi OS (run as root from the repo):
#     sudo systemd/install.sh
# Creates the system user `companion`, a virtual environment in /opt/companion/venv
# with the Pi pin libraries, the unit, and starts it.  Safe to run again to upgrade.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
prefix=/opt/companion

# I2C on, at 400 kHz (the SSD1306 and SH1106 are specified up to 400 kHz): a
# full frame takes ~25 ms on the wire instead of ~92 ms at the Pi's default
# 100 kHz.  Idempotent: the block is added once, at the end of config.txt
# under [all] (so that no [pi4]-style section above can swallow it).
# Undo:  sudo sed -i '/^# companion: I2C/,+2d' /boot/firmware/config.txt   and reboot.
# Alone: systemd/install.sh --i2c-only [CONFIG.TXT]
I2C_MARK="# companion: I2C on at 400 kHz (to undo, delete these three lines and reboot)"
I2C_LINE="dtparam=i2c_arm=on,i2c_arm_baudrate=400000"
set_i2c_speed() {
    local config="${1:-}"
    if [ -z "$config" ]; then
        if [ -f /boot/firmware/config.txt ]; then config=/boot/firmware/config.txt   # bookworm
        elif [ -f /boot/config.txt ]; then config=/boot/config.txt                  # before bookworm
        else echo "install.sh: no config.txt: not a Raspberry Pi? I2C speed left alone" >&2; return 0; fi
    fi
    if grep -qxF "$I2C_LINE" "$config"; then
        echo "install.sh: $config already sets I2C at 400 kHz"
        return 0
    fi
    printf '\n%s\n[all]\n%s\n' "$I2C_MARK" "$I2C_LINE" >> "$config"
    echo "install.sh: I2C set to 400 kHz in $config (reboot to apply)"
}
if [ "${1:-}" = "--i2c-only" ]; then set_i2c_speed "${2:-}"; exit 0; fi

if [ "$(id -u)" -ne 0 ]; then echo "install.sh: run me with sudo" >&2; exit 1; fi

# (No system font: the box draws with the Terminus fonts shipped in hardware/fonts.)
apt-get install -y python3-venv i2c-tools
# The box's own Wi-Fi (companion-wifi.service): nft redirects phones' port-80
# probes to the box; hostapd and dnsmasq only where NetworkManager is absent.
apt-get install -y nftables
command -v nmcli >/dev/null || apt-get install -y hostapd dnsmasq-base

id companion >/dev/null 2>&1 || useradd --system --home-dir /var/lib/companion --shell /usr/sbin/nologin companion
# The unit's SupplementaryGroups= must exist or systemd refuses to start it:
# Raspberry Pi OS has both groups (its udev rules give them the pins and the
# bus); a plain Debian (a PC, a VM) has no gpio group, and the box runs there
# without pins.
for group in gpio i2c; do
    getent group "$group" >/dev/null || groupadd --system "$group"
    usermod -a -G "$group" companion
done

mkdir -p "$prefix"
rm -rf "$prefix/src" && cp -r "$repo" "$prefix/src" && rm -rf "$prefix/src/.venv" "$prefix/src/.git"
[ -x "$prefix/venv/bin/python" ] || python3 -m venv "$prefix/venv"
"$prefix/venv/bin/pip" install --upgrade pip
"$prefix/venv/bin/pip" install "$prefix/src[pi]"

set_i2c_speed

install -m 0644 "$repo/systemd/companion.service" /etc/systemd/system/companion.service
install -m 0644 "$repo/systemd/companion-wifi.service" /etc/systemd/system/companion-wifi.service
install -m 0644 "$repo/systemd/companion-setup.path" /etc/systemd/system/companion-setup.path
install -m 0644 "$repo/systemd/companion-setup.service" /etc/systemd/system/companion-setup.service
[ -f /etc/default/companion ] || printf '# COMPANION_PIN=1234\n# COMPANION_LANG=fr\n' > /etc/default/companion
systemctl daemon-reload
systemctl enable companion.service
systemctl restart companion.service      # restart, not start: an upgrade runs the new code
systemctl enable companion-wifi.service  # the box's own Wi-Fi when no known network comes (wifi setting)
systemctl restart companion-wifi.service
systemctl enable --now companion-setup.path   # set-up from a phone: its root side (time zone, name, SSH)
systemctl --no-pager status companion.service || true
echo "companion: installed. Follow it with: journalctl -u companion -f"
