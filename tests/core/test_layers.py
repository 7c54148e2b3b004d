"""The packages' import rules, as docs/architecture.md draws them.

    companion/        the table: imports nothing else of ours
    hardware/, web/   its adapters: the core, and appliance's service side
    appliance/        the lifecycle; runner.py and cli.py at the top import all
    appliance/root/   what runs as root: the core and appliance's service side,
                      never the panel's drawing code (PIL) or the web (Flask)

Read from the source with ``ast`` (imports inside functions count too), and
for the root units' commands also from a real interpreter: what importing
them loads.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("companion", "appliance", "hardware", "web", "hub")
TOP = {"appliance.runner", "appliance.cli"}        # the start sequence and the command line
# The self-check imports the adapters on purpose: a release whose web side
# does not import must fail it before it is kept (appliance/selfcheck.py).
ADAPTER_CHECK = {"appliance.selfcheck"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports made absolute."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            # "from appliance import runner" imports the module appliance.runner
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def ours(found: set[str], prefixes) -> set[str]:
    return {m for m in found if any(m == p or m.startswith(p + ".") for p in prefixes)}


def test_the_core_imports_nothing_else_of_ours():
    wrong = {f"{module_name(p)} -> {m}" for p in sources("companion")
             for m in ours(imports(p), ("appliance", "hardware", "web", "hub"))}
    assert not wrong, sorted(wrong)


def test_the_adapters_never_import_the_start_the_command_line_or_roots_code():
    wrong = {f"{module_name(p)} -> {m}" for pkg in ("hardware", "web", "hub") for p in sources(pkg)
             for m in ours(imports(p), (*TOP, "appliance.root"))}
    assert not wrong, sorted(wrong)


def test_the_lifecycle_below_the_top_never_imports_the_adapters():
    wrong = {f"{module_name(p)} -> {m}" for p in sources("appliance")
             if module_name(p) not in TOP | ADAPTER_CHECK
             for m in ours(imports(p), ("hardware", "web", "hub", *TOP))}
    assert not wrong, sorted(wrong)


def test_roots_code_imports_no_panel_and_no_web():
    wrong = {f"{module_name(p)} -> {m}" for p in sources("appliance/root")
             for m in ours(imports(p), ("hardware", "web", "hub", "PIL", "flask", "luma", "gpiozero", *TOP))}
    assert not wrong, sorted(wrong)


@pytest.mark.parametrize("command", ["update", "wifi", "setup-apply"])
def test_a_root_units_command_loads_no_panel_and_no_web(command):
    """What a root unit runs (``companion update --worker``, ``companion wifi``,
    ``companion setup-apply``), imported as the command line imports it."""
    probe = (
        "import importlib, json, sys\n"
        "from appliance import cli\n"
        f"module = cli.COMMANDS[{command!r}].split(':')[0]\n"
        "importlib.import_module(module)\n"
        "if module == 'appliance.updates':\n"
        "    importlib.import_module('appliance.root.updater')   # --worker and --recover go on there\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('PIL', 'flask', 'werkzeug', 'waitress', 'luma', 'gpiozero', 'hardware', 'web'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_only_the_hint_worker_runs_programs_from_the_core():
    """The core runs no program (systemctl, pip...): the appliance does.  The
    one exception is FIGHT?'s hint, searched in a process of its own."""
    runs = {module_name(p) for p in sources("companion") if "subprocess" in imports(p)
            or any(word in p.read_text(encoding="utf-8") for word in ('"systemctl"', '"pip"'))}
    assert runs == {"companion.hints"}


def _installs_signal_handlers(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "signal" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "signal"):
            return True
    return False


def test_only_the_start_sequence_and_roots_daemon_own_their_process():
    """Signals are the process's: ``companion run``'s (appliance/runner.py),
    the Wi-Fi daemon's (a process of its own, as root) and the club hub's
    server (another machine's); never the web side's or the box's."""
    owners = {module_name(p) for pkg in PACKAGES for p in sources(pkg) if _installs_signal_handlers(p)}
    assert owners == {"appliance.runner", "appliance.root.wifi", "hub.serve"}


def _hand_written_flushes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("fsync", "fdatasync", "replace", "rename", "renames")
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "os"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} os.{node.func.attr}")
    return found


def test_every_kept_file_is_written_the_one_durable_way():
    """A flush or a rename written by hand is a guarantee of its own: every
    file the box keeps goes through companion/durable.py instead (the one
    place that calls them; SQLite's flushes are SQLite's)."""
    scripts = [ROOT / "systemd/image/build"]
    found = [hit for pkg in PACKAGES for p in sources(pkg) if p != ROOT / "companion/durable.py"
             for hit in _hand_written_flushes(p)] + [hit for p in scripts for hit in _hand_written_flushes(p)]
    assert found == []
