"""A new release's environment carries over, file for file, what the running one has of its wheels.

Real pip installs a small wheel made here (pip's own RECORD, .pyc files and
console script, not an imitation of them); pip comes from the wheel Python
ships for ensurepip.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import ensurepip
import pytest

from appliance import envreuse
from appliance.root.updater import SystemdSystem
from appliance.updates import Layout

PIP_WHEELS = sorted(Path(ensurepip.__file__).parent.glob("_bundled/pip-*.whl")) + sorted(
    Path("/usr/share/python-wheels").glob("pip-*.whl"))
pytestmark = pytest.mark.skipif(not PIP_WHEELS, reason="no pip wheel beside this Python (ensurepip's)")


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def dice_wheel(folder: Path, version: str = "1.0", roll: str = "4") -> Path:
    """``table_dice``: one module and a console script, as a build backend would wheel it."""
    info = f"table_dice-{version}.dist-info"
    files = {
        "table_dice/__init__.py": f"def roll():\n    return {roll}\n\ndef main():\n    print(roll())\n".encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: table-dice\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": b"[console_scripts]\ntable-dice = table_dice:main\n",
    }
    record = "".join(f"{name},{_hash(data)},{len(data)}\n" for name, data in files.items()) + f"{info}/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"table_dice-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{info}/RECORD", record)
    return path


def empty_env(tmp: Path, name: str) -> Path:
    env = tmp / name / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    return env


def env_with(tmp: Path, name: str, *wheels: Path) -> Path:
    env = empty_env(tmp, name)
    subprocess.run([str(env / "bin/python"), str(PIP_WHEELS[-1] / "pip"), "install", "--no-index", "--no-deps",
                    "-q", *map(str, wheels)], check=True)
    envreuse.note_hashes(env)                      # as the installer and install.sh do once it is built
    return env


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    """The running release's environment: table_dice 1.0 installed by pip (once: pip is slow on a Pi)."""
    tmp = tmp_path_factory.mktemp("running")
    wheel = dice_wheel(tmp / "wheels")
    return env_with(tmp, "1.0", wheel), wheel


def dice(env: Path) -> str:
    return subprocess.run([str(env / "bin/table-dice")], capture_output=True, text=True, check=True).stdout.strip()


def test_an_unchanged_wheel_is_linked_from_the_running_release_with_its_script_and_pyc(tmp_path, running):
    old, wheel = running
    new = empty_env(tmp_path, "2.0")
    assert envreuse.carry_over([wheel], old, new) == []
    old_site, new_site = envreuse.site_packages(old), envreuse.site_packages(new)
    module = "table_dice/__init__.py"
    assert (new_site / module).stat().st_ino == (old_site / module).stat().st_ino
    assert list((new_site / "table_dice/__pycache__").glob("*.pyc"))       # compiled once, by the first install
    assert str(new) in (new / "bin/table-dice").read_text().splitlines()[0]  # the script names its own env
    assert dice(new) == "4"


def test_a_release_installed_the_old_way_is_carried_over_through_its_link(tmp_path, running):
    old, wheel = tmp_path / "releases/legacy/venv", running[1]
    old.parent.mkdir(parents=True)
    old.symlink_to(running[0])                          # as install.sh keeps /opt/companion/venv
    new = empty_env(tmp_path, "2.0")
    assert envreuse.carry_over([wheel], old, new) == []
    assert str(new) in (new / "bin/table-dice").read_text().splitlines()[0]
    assert dice(new) == "4"


def test_a_file_the_card_damaged_is_not_carried_over(tmp_path, running):
    old, wheel = tmp_path / "1.0/venv", running[1]
    shutil.copytree(running[0], old, symlinks=True)
    module = envreuse.site_packages(old) / "table_dice/__init__.py"
    module.write_text(module.read_text().replace("4", "5"))
    new = empty_env(tmp_path, "2.0")
    assert envreuse.carry_over([wheel], old, new) == [wheel]
    assert not (envreuse.site_packages(new) / "table_dice").exists()


def test_compiled_files_nothing_vouches_for_are_not_carried_over(tmp_path, running):
    old, wheel = tmp_path / "1.0/venv", running[1]
    shutil.copytree(running[0], old, symlinks=True)
    (old / envreuse.HASHES).unlink()
    new = empty_env(tmp_path, "2.0")
    assert envreuse.carry_over([wheel], old, new) == [wheel]


@pytest.mark.parametrize("what", ["compiled file", "console script"])
def test_what_pip_added_is_checked_on_the_card_too(tmp_path, running, what):
    """The ``.pyc`` files and console scripts come from the installed RECORD,
    not the wheel's: a damaged one is not carried over either."""
    old, wheel = tmp_path / "1.0/venv", running[1]
    shutil.copytree(running[0], old, symlinks=True)
    if what == "compiled file":
        damaged = next((envreuse.site_packages(old) / "table_dice/__pycache__").glob("*.pyc"))
    else:
        damaged = old / "bin/table-dice"
    data = bytearray(damaged.read_bytes())
    data[-2] ^= 0x20
    damaged.write_bytes(bytes(data))
    new = empty_env(tmp_path, "2.0")
    assert envreuse.carry_over([wheel], old, new) == [wheel]
    assert not (envreuse.site_packages(new) / "table_dice").exists() and not (new / "bin/table-dice").exists()


def test_a_carried_script_is_listed_as_rewritten_so_the_next_release_carries_it_again(tmp_path, running):
    old, wheel = running
    second = empty_env(tmp_path, "2.0")
    assert envreuse.carry_over([wheel], old, second) == []
    record = next(envreuse.site_packages(second).glob("table_dice-*.dist-info/RECORD"))
    assert record.stat().st_nlink == 1            # its own: it names the script as this release has it
    envreuse.note_hashes(second)                  # as the installer does once it is built
    third = empty_env(tmp_path, "3.0")
    assert envreuse.carry_over([wheel], second, third) == []
    assert str(third) in (third / "bin/table-dice").read_text().splitlines()[0]
    assert dice(third) == "4"


@pytest.mark.parametrize("other", [{"version": "1.1"}, {"roll": "6"}], ids=["newer", "same-version-other-files"])
def test_a_wheel_that_differs_from_what_runs_is_installed_afresh(tmp_path, running, other):
    old = running[0]
    wheel = dice_wheel(tmp_path / "wheels", **other)
    new = empty_env(tmp_path, "2.0")
    assert envreuse.carry_over([wheel], old, new) == [wheel]


def test_the_installer_builds_the_first_environment_from_the_wheels_and_the_next_from_what_runs(tmp_path):
    wheels = tmp_path / "wheels"
    dice_wheel(wheels)
    (wheels / PIP_WHEELS[-1].name).write_bytes(PIP_WHEELS[-1].read_bytes())
    system = SystemdSystem(Layout(prefix=tmp_path / "opt", data=tmp_path / "data", root=tmp_path / "root"))
    first, second = tmp_path / "opt/releases/1.0", tmp_path / "opt/releases/2.0"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    system.build_env(first, wheels)                    # no running release: pip runs from its own wheel
    assert dice(first / "venv") == "4"
    dice_wheel(wheels, roll="6")                       # the next release changes this wheel, keeps pip
    system.build_env(second, wheels, running=first)
    assert dice(second / "venv") == "6"
    site1, site2 = (envreuse.site_packages(r / "venv") for r in (first, second))
    assert (site2 / "pip/__init__.py").stat().st_ino == (site1 / "pip/__init__.py").stat().st_ino
    assert (site2 / "table_dice/__init__.py").stat().st_ino != (site1 / "table_dice/__init__.py").stat().st_ino
    assert dice(first / "venv") == "4"                 # the running release is untouched
