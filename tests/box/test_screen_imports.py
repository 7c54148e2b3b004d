"""The box's screens do not import the menu.

``hardware/ui/menus.py`` opens the screens (the clock, the hub, set-up, the
game page, brightness...), so it imports them; were a screen to import the
menu back (for ``Layer``, the QR code or any small helper), the two would
stand in an import circle, and each would need the other half-loaded.  What
screens share lives in ``hardware/ui/common.py`` instead.  Only the menu
itself and ``app.py``, which puts the screens together, may import it.

Read from the source with :mod:`ast`, every form counts: ``from .menus
import X``, ``from . import menus``, ``import hardware.ui.menus``, and an
import inside a function (a late import hides the circle, it does not
break it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import hardware.ui

UI = Path(hardware.ui.__file__).parent
PACKAGE = "hardware.ui"
MENUS = f"{PACKAGE}.menus"
MAY_IMPORT_MENUS = {"menus.py", "app.py"}


def imported_names(tree: ast.Module, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every module an import statement may load:
    relative imports resolved against ``package``, and for ``from X import
    y`` both ``X`` and ``X.y`` (``y`` may be a submodule)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def menus_imports(path: Path) -> list[str]:
    """``file:line`` of each import of the menu in ``path`` (a module of hardware/ui)."""
    package = ".".join([PACKAGE, *path.relative_to(UI).parent.parts])
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = {line for line, name in imported_names(tree, package) if name == MENUS or name.startswith(MENUS + ".")}
    return [f"{path.relative_to(UI)}:{line}" for line in sorted(lines)]


def test_no_screen_imports_the_menu():
    offenders = [hit for path in sorted(UI.rglob("*.py")) if str(path.relative_to(UI)) not in MAY_IMPORT_MENUS
                 for hit in menus_imports(path)]
    assert not offenders, ("a screen imports hardware/ui/menus.py (the menu imports the screens): "
                           "take what it needs from hardware/ui/common.py\n" + "\n".join(offenders))


def test_the_check_sees_every_form_of_import():
    """The check is not blind: each way of writing the import is caught, and
    app.py's own import of the menu (allowed) is found."""
    forms = ["from .menus import Layer", "from . import menus", "from . import base, menus",
             "import hardware.ui.menus", "from hardware.ui.menus import qr_image",
             "from hardware.ui import menus", "from ..ui.menus import Layer",
             "def later():\n    from .menus import JoinScreen\n"]
    for source in forms:
        names = [name for _line, name in imported_names(ast.parse(source), PACKAGE)]
        assert MENUS in names, source
    for source in ["from .menus_help import x", "from . import common", "import menus_elsewhere"]:
        names = [name for _line, name in imported_names(ast.parse(source), PACKAGE)]
        assert MENUS not in names, source
    assert menus_imports(UI / "app.py")
