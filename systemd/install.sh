#!/usr/bin/env bash
# Install the companion as a service on Raspberry Pi OS (run as root from the repo):
#     sudo systemd/install.sh [--release-key FILE]...
# Creates the system user `companion`, a release in /opt/companion/releases/<version>
# (the source and its own virtual environment, with the versions requirements.lock
# pins and the Pi pin libraries), switches /opt/companion/current to it in one
# rename (the release before stays as /opt/companion/previous), adds the release
# keys given, writes the units, and starts them.  Safe to run again to upgrade; a box
# installed the old way (/opt/companion/venv and src) moves to releases on its next run.
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

# Release keys: the public keys whose update bundles the box installs (appliance/release_keys.py).
# --release-key FILE (again for more keys): the keys in FILE ("ed25519 BASE64 comment" lines, as
# `companion bundle --new-key` prints them) are ADDED to the list.  The list is made from
# systemd/release-keys (a header, no key) only when there is none, and never written over:
# a key added by hand or on the Update page stays, and one its owner removed does not come
# back with the next upgrade.  A key file that is not one is refused before anything changes.
# Alone, on an installed box:  sudo systemd/install.sh --keys-only --release-key FILE
# (COMPANION_RELEASE_KEYS names another list: the tests' own folder.)
RELEASE_KEYS="${COMPANION_RELEASE_KEYS:-/etc/companion/release-keys}"
key_files=()
keys_only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --release-key)
            if [ $# -lt 2 ] || [ ! -f "$2" ]; then echo "install.sh: --release-key needs a key file (${2:-none given})" >&2; exit 2; fi
            key_files+=("$(readlink -f -- "$2")"); shift 2 ;;
        --keys-only) keys_only=1; shift ;;
        *) echo "install.sh: unknown option $1 (--release-key FILE, --keys-only, --i2c-only [CONFIG.TXT])" >&2; exit 2 ;;
    esac
done
# Run with the system's python3 from the repo itself (the release's environment may not exist
# yet): -s keeps a user's site-packages out; the module is standard library only.
release_keys() { (cd "$repo" && python3 -s -m appliance.release_keys "$@"); }
add_release_keys() {
    if [ ! -e "$RELEASE_KEYS" ]; then
        install -d -m 0755 "$(dirname "$RELEASE_KEYS")"
        install -m 0644 "$repo/systemd/release-keys" "$RELEASE_KEYS"
    fi
    if [ "${#key_files[@]}" -gt 0 ]; then release_keys add "$RELEASE_KEYS" "${key_files[@]}"; fi
}
if [ "${#key_files[@]}" -gt 0 ]; then release_keys check "${key_files[@]}" || exit 2; fi
if [ -n "$keys_only" ]; then
    if [ "${#key_files[@]}" -eq 0 ]; then echo "install.sh: --keys-only needs --release-key FILE" >&2; exit 2; fi
    add_release_keys
    exit 0
fi

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

mkdir -p "$prefix/releases"
# The release's name: its version, and the time when that version is already current.
version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$repo/companion/__init__.py")"
[ -f "$repo/RELEASE" ] && version="$(head -n1 "$repo/RELEASE")"
release="$version"
[ "$(readlink "$prefix/current" 2>/dev/null)" = "releases/$release" ] && release="$version-$(date +%Y%m%d%H%M%S)"
rel="$prefix/releases/$release"
rm -rf "$rel" && mkdir -p "$rel" && touch "$rel/.unfinished"   # removed at boot if never finished
cp -r "$repo" "$rel/src" && rm -rf "$rel/src/.venv" "$rel/src/.git"
# The release's own environment.  pip runs in place from the pip wheel Debian
# ships for venv (python3-pip-whl, which python3-venv brings) and installs the
# lock's pip there with the rest: a venv made with its own pip and setuptools,
# then that pip upgraded, byte-compiled pip twice and setuptools once, which
# the box never runs (about 2.5 of the 5 minutes this took on an emulated CPU).
# The lock's pip, not Debian's: an update bundle carries that same pip wheel,
# and an update links what is the same file for file instead of installing
# it again (appliance/envreuse.py), pip's thousand files included.
python3 -m venv --without-pip "$rel/venv"
pip_wheel="$(ls /usr/share/python-wheels/pip-*.whl 2>/dev/null | tail -n1)"
if [ -n "$pip_wheel" ]; then
    pip=("$rel/venv/bin/python" "$pip_wheel/pip")
else                                # not Debian's python3-venv: the venv's own pip
    "$rel/venv/bin/python" -m ensurepip && pip=("$rel/venv/bin/pip")
fi
"${pip[@]}" install --disable-pip-version-check -c "$rel/src/requirements.lock" pip "$rel/src[pi]"
# The SHA-256 of each compiled file (pip lists none): an update carries over
# only what it can check (appliance/envreuse.py).
"$rel/venv/bin/python" -m appliance.envreuse "$rel/venv"
sync
rm "$rel/.unfinished"
# The old layout (one venv and src in place): kept as the previous release, by links.
if [ -d "$prefix/venv" ] && [ ! -L "$prefix/current" ]; then
    mkdir -p "$prefix/releases/legacy"
    ln -sfn ../../venv "$prefix/releases/legacy/venv" && ln -sfn ../../src "$prefix/releases/legacy/src"
    ln -sfn releases/legacy "$prefix/current"
fi
# Switched by rename(2) (mv -T), never by ln -sfn (which unlinks, then links).
if old="$(readlink "$prefix/current")"; then
    ln -sfn "$old" "$prefix/.previous.new" && mv -T "$prefix/.previous.new" "$prefix/previous"
fi
ln -sfn "releases/$release" "$prefix/.current.new" && mv -T "$prefix/.current.new" "$prefix/current"
sync
# Releases other than these two go.
for old in "$prefix"/releases/*; do
    case "releases/$(basename "$old")" in "$(readlink "$prefix/current")"|"$(readlink "$prefix/previous")") ;; *) rm -rf "$old" ;; esac
done
# Updates: only bundles signed by a key in this root-owned list, kept across installs (above).
install -d -m 0755 /etc/companion /var/lib/companion-update
add_release_keys

set_i2c_speed

install -m 0644 "$repo/systemd/companion.service" /etc/systemd/system/companion.service
install -m 0644 "$repo/systemd/companion-wifi.service" /etc/systemd/system/companion-wifi.service
install -m 0644 "$repo/systemd/companion-splash.service" /etc/systemd/system/companion-splash.service
# The panel's bus as a device node from the start of the boot (the splash, then the box).
echo i2c-dev > /etc/modules-load.d/companion.conf
for unit in companion-update.path companion-update.service companion-update-boot.service; do
    install -m 0644 "$repo/systemd/$unit" "/etc/systemd/system/$unit"
done
install -m 0644 "$repo/systemd/companion-setup.path" /etc/systemd/system/companion-setup.path
install -m 0644 "$repo/systemd/companion-setup.service" /etc/systemd/system/companion-setup.service
install -m 0644 "$repo/systemd/companion-reset.service" /etc/systemd/system/companion-reset.service
# Root's own record of the owner and of set-up (appliance/root/owner.py), apart
# from the service's folder.  A box fresh from the image (built offline, never
# booted) opens set-up for root: the first phone with the panel's PIN chooses
# the owner's password.  A box installed here by hand has no record, which is
# closed: its owner chooses the password at this shell
# (/opt/companion/current/venv/bin/companion owner).
install -d -m 0700 /var/lib/companion-owner
if [ -n "${SYSTEMD_OFFLINE:-}" ] && [ ! -e /var/lib/companion-owner/setup.json ] \
        && [ ! -e /var/lib/companion-owner/owner.json ]; then
    printf '{"open": true}\n' > /var/lib/companion-owner/setup.json
    chmod 0600 /var/lib/companion-owner/setup.json
fi
# Set-up from a phone is for a box fresh from the image (built in a chroot,
# never booted).  A person running this script on a booted Pi has set it up
# already, often over the house's Wi-Fi: set-up mode would raise the box's own
# network and cut that connection.  Menu → Reset settings brings it back.
if [ -z "${SYSTEMD_OFFLINE:-}" ] && [ -d /run/systemd/system ] && [ ! -e /var/lib/companion/setup.json ]; then
    install -d -m 0750 -o companion -g companion /var/lib/companion
    printf '{"done": true}\n' > /var/lib/companion/setup.json
    chown companion:companion /var/lib/companion/setup.json && chmod 0600 /var/lib/companion/setup.json
fi
[ -f /etc/default/companion ] || printf '# COMPANION_PIN=1234\n# COMPANION_LANG=fr\n' > /etc/default/companion
# One enable without its reload, then one reload (each takes seconds on a Pi
# Zero; an upgrade needs the reload anyway, to read the new unit files):
#   companion-splash: "Starting…" on the panel early in the boot;
#   companion-wifi: the box's own Wi-Fi when no known network comes (wifi setting);
#   companion-update*: a bundle the service asks for (companion update, the Update page),
#     and the check of the boot after an update;
#   companion-setup.path: set-up from a phone, its root side (time zone, name, SSH);
#   companion-reset: "forgot the owner password" (a file on the boot partition, at boot).
# (enable --now fails in the image build's chroot; the restarts are skipped there.)
systemctl enable --no-reload companion.service companion-splash.service companion-wifi.service \
    companion-update-boot.service companion-update.service companion-update.path companion-setup.path \
    companion-reset.service
systemctl daemon-reload
systemctl restart companion.service      # restart, not start: an upgrade runs the new code
systemctl restart companion-wifi.service companion-update.path companion-setup.path
systemctl --no-pager status companion.service || true
echo "companion: installed. Follow it with: journalctl -u companion -f"
