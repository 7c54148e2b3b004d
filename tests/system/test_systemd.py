"""The unit file: `systemd-analyze verify` clean, and the settings the service needs."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "companion.service"


def parsed():
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str
    cp.read(UNIT)
    return cp


def test_unit_declares_notify_watchdog_restart_and_state_directory():
    unit = parsed()
    service = unit["Service"]
    assert service["Type"] == "notify"
    assert int(service["WatchdogSec"]) > 0
    assert service["Restart"] == "on-failure"
    assert service["StateDirectory"] == "companion"
    assert service["User"] == "companion"
    assert "companion run" in service["ExecStart"]
    assert "PrivateDevices" not in service, "would hide /dev/gpiochip* and /dev/i2c-*"
    assert "StartLimitBurst" in unit["Unit"], "start limits belong in [Unit]"
    assert int(service["WatchdogSec"]) <= 30, "a frozen box must come back within half a minute"


def test_the_box_starts_without_waiting_for_a_network():
    # At a table with no Wi-Fi, network-online.target is reached only after the
    # wait-online timeout: the box must not be ordered after it, nor need it.
    unit = parsed()["Unit"]
    for key in ("After", "Wants", "Requires", "BindsTo", "Requisite"):
        assert "network-online" not in unit.get(key, ""), key
        assert "time-sync" not in unit.get(key, ""), key


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_is_clean(tmp_path):
    # ExecStart must name an existing executable: point it at this venv's command.
    exe = Path(sys.executable).with_name("companion")
    text = UNIT.read_text().replace("/opt/companion/current/venv/bin/companion", str(exe))
    unit = tmp_path / "companion.service"
    unit.write_text(text)
    run = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    problems = [l for l in (run.stdout + run.stderr).splitlines()
                if "companion.service" in l and str(tmp_path) in l or "companion.service:" in l]
    assert run.returncode == 0 and not problems, run.stdout + run.stderr


def security_score(unit: Path) -> float | None:
    """``systemd-analyze security --offline`` (systemd 250+) of ``unit``."""
    run = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
                         capture_output=True, text=True, timeout=120)
    found = re.search(r"Overall exposure level for companion\.service: ([0-9.]+)", run.stdout + run.stderr)
    return float(found.group(1)) if found else None


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_exposure_is_at_most_3_and_the_box_keeps_its_devices(tmp_path):
    unit = tmp_path / "companion.service"
    unit.write_text(UNIT.read_text())
    score = security_score(unit)
    if score is None:
        pytest.skip("this systemd-analyze has no --offline")
    assert score <= 3.0, score
    service = parsed()["Service"]
    allowed = UNIT.read_text()
    for device in ("char-gpiochip", "char-i2c", "char-spi"):   # the buttons, the OLED on I2C or on SPI
        assert f"DeviceAllow={device} rw" in allowed, device
    assert service["DevicePolicy"] == "closed"
    families = service["RestrictAddressFamilies"].split()
    assert {"AF_INET", "AF_UNIX"} <= set(families), "the web side, mDNS and systemd's notify socket"
    # The score can fail: the same unit without its hardening is exposed.
    bare = "\n".join(l for l in UNIT.read_text().splitlines()
                     if not re.match(r"(Protect|Private|Restrict|SystemCall|Capability|Device|NoNew|Memory|"
                                     r"Lock|RemoveIPC|UMask|AmbientCap)", l))
    unit.write_text(bare)
    assert security_score(unit) > 3.0


SPLASH = UNIT.with_name("companion-splash.service")


def test_the_splash_runs_early_on_the_standard_library_alone():
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str
    cp.read(SPLASH)
    assert cp["Unit"]["DefaultDependencies"] == "no"
    # never holds the box's start back: not ordered before it
    assert "companion.service" not in cp["Unit"].get("Before", "")
    start = cp["Service"]["ExecStart"].split()
    # the system's python3, isolated: nothing of the companion's environment
    assert start[:2] == ["/usr/bin/python3", "-I"] and start[2].endswith("/hardware/splash.py")
    assert "DeviceAllow=char-i2c rw" in SPLASH.read_text()


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_of_the_splash_is_clean(tmp_path):
    script = Path(__file__).resolve().parents[2] / "hardware" / "splash.py"
    unit = tmp_path / "companion-splash.service"
    unit.write_text(SPLASH.read_text().replace("/opt/companion/current/src/hardware/splash.py", str(script)))
    run = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    problems = [l for l in (run.stdout + run.stderr).splitlines() if "companion-splash.service" in l]
    assert run.returncode == 0 and not problems, run.stdout + run.stderr
