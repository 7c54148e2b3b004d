"""The unit file: `systemd-analyze verify` clean, and the settings the service needs."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[1] / "systemd" / "companion.service"


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
    assert unit["Unit"]["Wants"] == "network-online.target", "Wants, not Requires: must run offline"


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_is_clean(tmp_path):
    # ExecStart must name an existing executable: point it at this venv's command.
    exe = Path(sys.executable).with_name("companion")
    text = UNIT.read_text().replace("/opt/companion/venv/bin/companion", str(exe))
    unit = tmp_path / "companion.service"
    unit.write_text(text)
    run = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    problems = [l for l in (run.stdout + run.stderr).splitlines()
                if "companion.service" in l and str(tmp_path) in l or "companion.service:" in l]
    assert run.returncode == 0 and not problems, run.stdout + run.stderr
