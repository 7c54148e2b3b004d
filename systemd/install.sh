#!/usr/bin/env bash
# Install the companion as a service on Raspberry Pi OS (run as root from the repo):
#     sudo systemd/install.sh
# Creates the system user `companion`, a virtual environment in /opt/companion/venv
# with the Pi pin libraries, the unit, and starts it.  Safe to run again to upgrade.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
prefix=/opt/companion

if [ "$(id -u)" -ne 0 ]; then echo "install.sh: run me with sudo" >&2; exit 1; fi

apt-get install -y python3-venv fonts-dejavu-core i2c-tools

id companion >/dev/null 2>&1 || useradd --system --home-dir /var/lib/companion --shell /usr/sbin/nologin companion
for group in gpio i2c; do
    getent group "$group" >/dev/null && usermod -a -G "$group" companion
done

mkdir -p "$prefix"
rm -rf "$prefix/src" && cp -r "$repo" "$prefix/src" && rm -rf "$prefix/src/.venv" "$prefix/src/.git"
[ -x "$prefix/venv/bin/python" ] || python3 -m venv "$prefix/venv"
"$prefix/venv/bin/pip" install --upgrade pip
"$prefix/venv/bin/pip" install "$prefix/src[pi]"

install -m 0644 "$repo/systemd/companion.service" /etc/systemd/system/companion.service
[ -f /etc/default/companion ] || printf '# COMPANION_PIN=1234\n# COMPANION_LANG=fr\n' > /etc/default/companion
systemctl daemon-reload
systemctl enable --now companion.service
systemctl --no-pager status companion.service || true
echo "companion: installed. Follow it with: journalctl -u companion -f"
