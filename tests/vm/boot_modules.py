"""Does the image's initrd hold what each covered Pi needs to find its root?

Read from the image's own files only: each board's device tree (the .dtb
files of the FAT boot partition), the kernel's module tables of the root
(``modules.alias``, ``modules.builtin.modinfo``, ``modules.dep``,
``modules.softdep``) and the initrd's file list.  QEMU boots one of these
boards (``raspi3b``); the Pi 4's and the Zero 2 W's device trees cannot be
booted here, so for them this is the only check.

For each device tree:

1. its SD card's controller: an enabled MMC host that is not wired to a
   fixed device (no ``non-removable``, no Wi-Fi chip under it: on the Pi 3
   and the Zero 2 W the SDHCI drives the Wi-Fi chip and the "sdhost" the
   card; on the Pi 4 "emmc2" the card);
2. what its probe waits for: the providers its properties point at
   (clocks, DMA channels, regulators, GPIOs, resets, pin control, the
   interrupt controller, power domains, a power sequence), the providers
   *they* point at, and the parents of each (a GPIO expander is a child of
   the firmware node, which must come first), stopping at a driver known
   to be built into the kernel (there from the start, whatever it points
   at), and not through a clock controller's own input clocks;
3. the driver of each, found as the kernel finds it: the node's modalias
   (``of:N<name>T<type>C<compatible>...``) matched against the patterns of
   ``modules.alias`` (loadable) and ``modules.builtin.modinfo`` (built in:
   Debian's 6.1 records there only a driver's explicit aliases, not its
   device table's, so most built-in drivers are "no loadable module", and
   the walk goes on through them);
   then the card's own block driver (``mmc:block``) and the root's file
   system (``fs-ext4``), which no device tree names;
4. every loadable module found, with its dependencies (``modules.dep``) and
   its ``pre:`` soft dependencies, must be in the initrd.

A node with no driver at all (``simple-bus``, a fixed clock) is probed by
the kernel's core or needs nothing: it is listed, never a failure.

Standard library only (the ``zstd`` or ``lz4`` command for an initrd
compressed that way).
"""

from __future__ import annotations

import bz2
import fnmatch
import gzip
import lzma
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field

# -- a flattened device tree (the .dtb format) ---------------------------------------------------

FDT_MAGIC = 0xD00DFEED
FDT_BEGIN_NODE, FDT_END_NODE, FDT_PROP, FDT_NOP, FDT_END = 1, 2, 3, 4, 9


class FdtError(ValueError):
    """Not a device tree blob, or a damaged one."""


@dataclass(eq=False)
class Node:
    name: str
    parent: "Node | None" = None
    props: dict = field(default_factory=dict)
    children: list = field(default_factory=list)

    @property
    def path(self) -> str:
        if self.parent is None:
            return "/"
        up = self.parent.path
        return (up if up.endswith("/") else up + "/") + self.name

    def strings(self, prop: str) -> list[str]:
        raw = self.props.get(prop)
        if not raw:
            return []
        return [s.decode("utf-8", "replace") for s in raw.rstrip(b"\0").split(b"\0")]

    def cells(self, prop: str) -> list[int]:
        raw = self.props.get(prop) or b""
        return list(struct.unpack(f">{len(raw) // 4}I", raw[: len(raw) // 4 * 4]))

    def cell(self, prop: str, default: int | None = None) -> int | None:
        values = self.cells(prop)
        return values[0] if values else default

    @property
    def compatible(self) -> list[str]:
        return self.strings("compatible")

    @property
    def enabled(self) -> bool:
        status = self.strings("status")
        return not status or status[0] in ("okay", "ok")

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


def _cstring(blob: bytes, at: int) -> tuple[str, int]:
    end = blob.index(b"\0", at)
    return blob[at:end].decode("utf-8", "replace"), end + 1


def parse_fdt(blob: bytes) -> Node:
    """The tree of a .dtb: its root node."""
    if len(blob) < 40:
        raise FdtError("too short for a device tree header")
    magic, total, off_struct, off_strings, _rsv, version, _last, _cpu, size_strings, size_struct = \
        struct.unpack_from(">10I", blob, 0)
    if magic != FDT_MAGIC:
        raise FdtError(f"not a device tree (magic {magic:#x})")
    if total > len(blob) or version < 16:
        raise FdtError(f"device tree of {total} bytes, version {version}: damaged or too old")
    strings = blob[off_strings: off_strings + size_strings]
    end = off_struct + (size_struct if version >= 17 else total - off_struct)
    at, root, node = off_struct, None, None
    while at < end:
        (token,) = struct.unpack_from(">I", blob, at)
        at += 4
        if token == FDT_BEGIN_NODE:
            name, at = _cstring(blob, at)
            at = (at + 3) & ~3
            child = Node(name, node)
            if node is None:
                if root is not None:
                    raise FdtError("two root nodes")
                root = child
            else:
                node.children.append(child)
            node = child
        elif token == FDT_END_NODE:
            if node is None:
                raise FdtError("a node ends that never began")
            node = node.parent
        elif token == FDT_PROP:
            if node is None:
                raise FdtError("a property outside any node")
            length, name_off = struct.unpack_from(">II", blob, at)
            at += 8
            name, _ = _cstring(strings, name_off)
            node.props[name] = blob[at: at + length]
            at = (at + length + 3) & ~3
        elif token == FDT_NOP:
            continue
        elif token == FDT_END:
            break
        else:
            raise FdtError(f"unknown token {token} at {at - 4}")
    if root is None or node is not None:
        raise FdtError("the tree does not close")
    return root


class Tree:
    """A parsed device tree with its phandles."""

    def __init__(self, blob: bytes):
        self.root = parse_fdt(blob)
        self.by_phandle: dict[int, Node] = {}
        for node in self.root.walk():
            handle = node.cell("phandle") or node.cell("linux,phandle")
            if handle:
                self.by_phandle[handle] = node

    @property
    def model(self) -> str:
        return (self.root.strings("model") or ["?"])[0]

    def sd_controllers(self) -> list[Node]:
        """The MMC hosts wired to a card slot: enabled, removable, no
        SDIO device (the Wi-Fi chip) described under them."""
        found = []
        for node in self.root.walk():
            base = node.name.split("@")[0]
            if base not in ("mmc", "sdhci", "sdhost", "mmcnr", "emmc") or not node.compatible:
                continue
            if not self.enabled_path(node) or "non-removable" in node.props:
                continue
            if any(child.compatible for child in node.children):
                continue            # an SDIO function (the Wi-Fi chip) hangs there
            found.append(node)
        return found

    def enabled_path(self, node: Node) -> bool:
        while node is not None:
            if not node.enabled:
                return False
            node = node.parent
        return True


# Properties that point at providers, and the provider's cell count that
# follows each phandle (None: a bare list of phandles).
_LISTS = {"clocks": "#clock-cells", "resets": "#reset-cells", "dmas": "#dma-cells",
          "power-domains": "#power-domain-cells", "mboxes": "#mbox-cells", "phys": "#phy-cells",
          "pwms": "#pwm-cells", "interrupts-extended": "#interrupt-cells", "iommus": "#iommu-cells",
          "mmc-pwrseq": None, "interrupt-parent": None}


def _provider_prop(name: str) -> str | None | bool:
    """The cells property for ``name``'s list, None for bare phandles,
    False when ``name`` points at no provider."""
    if name in _LISTS:
        return _LISTS[name]
    if name.endswith("-supply") or re.fullmatch(r"pinctrl-\d+", name):
        return None
    if name in ("gpios", "gpio") or name.endswith(("-gpios", "-gpio")):
        return "#gpio-cells"
    return False


def suppliers(tree: Tree, node: Node) -> list[tuple[str, Node]]:
    """(property, provider) for each provider ``node`` points at; the
    interrupt controller through the nearest ``interrupt-parent``."""
    out = []
    for name in node.props:
        cells_prop = _provider_prop(name)
        if cells_prop is False:
            continue
        values = node.cells(name)
        i = 0
        while i < len(values):
            provider = tree.by_phandle.get(values[i])
            if provider is None:
                break                   # 0 or a dangling handle: nothing to follow
            out.append((name, provider))
            extra = 0 if cells_prop is None else provider.cell(cells_prop, 0)
            i += 1 + extra
    if "interrupts" in node.props and "interrupt-parent" not in node.props:
        up = node.parent
        while up is not None and "interrupt-parent" not in up.props:
            up = up.parent
        handle = up.cell("interrupt-parent") if up is not None else None
        if handle in tree.by_phandle:
            out.append(("interrupt-parent", tree.by_phandle[handle]))
    return out


def device(node: Node) -> Node | None:
    """The node a driver binds: ``node`` itself, or (for a pin group or a
    regulator's sub-node) its nearest ancestor with a compatible."""
    while node is not None and not node.compatible:
        node = node.parent
    return node


def modalias(node: Node) -> str:
    """As the kernel writes it for a device-tree device: of:N<name>T<type>C<compat>..."""
    name = node.name.split("@")[0]
    kind = (node.strings("device_type") or ["<NULL>"])[0]
    return f"of:N{name}T{kind}" + "".join(f"C{c}" for c in node.compatible)


# -- the kernel's module tables ------------------------------------------------------------------

def module_name(path_or_name: str) -> str:
    base = path_or_name.rsplit("/", 1)[-1]
    base = re.sub(r"\.ko(\.(xz|zst|gz))?$", "", base)
    return base.replace("-", "_")


class Modules:
    """modules.alias, modules.builtin.modinfo, modules.dep and modules.softdep of one kernel."""

    def __init__(self, alias: str, builtin_modinfo: bytes, dep: str, softdep: str = "", builtin: str = ""):
        self.alias: list[tuple[str, str]] = []
        for line in alias.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "alias":
                self.alias.append((parts[1], module_name(parts[2])))
        self.builtin_alias: list[tuple[str, str]] = []
        self.builtin: set[str] = {module_name(l.strip()) for l in builtin.splitlines() if l.strip()}
        for entry in builtin_modinfo.split(b"\0"):
            text = entry.decode("utf-8", "replace")
            mod, dot, rest = text.partition(".")
            if not dot:
                continue
            self.builtin.add(module_name(mod))
            if rest.startswith("alias="):
                self.builtin_alias.append((rest[len("alias="):], module_name(mod)))
        self.deps: dict[str, list[str]] = {}
        for line in dep.splitlines():
            head, colon, tail = line.partition(":")
            if colon:
                self.deps[module_name(head)] = [module_name(p) for p in tail.split()]
        self.pre: dict[str, list[str]] = {}
        for line in softdep.splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[0] == "softdep":
                words, pre, now = parts[2:], [], None
                for w in words:
                    if w.endswith(":"):
                        now = w[:-1]
                    elif now == "pre":
                        pre.append(w)
                self.pre[module_name(parts[1])] = pre

    def match(self, alias: str) -> tuple[list[str], list[str]]:
        """(loadable modules, built-in drivers) whose patterns match ``alias``."""
        loadable = sorted({m for pat, m in self.alias if fnmatch.fnmatchcase(alias, pat)})
        builtin = sorted({m for pat, m in self.builtin_alias if fnmatch.fnmatchcase(alias, pat)})
        return loadable, builtin

    def resolve(self, name: str) -> list[str]:
        """A module name or an alias (a soft dependency's word) as modules."""
        name_ = module_name(name)
        if name_ in self.deps or name_ in self.builtin:
            return [name_]
        return self.match(name)[0]

    def closure(self, module: str) -> list[str]:
        """``module``, what modprobe loads before it (dependencies, soft
        ``pre:`` ones) and theirs; built-in ones left out."""
        seen: list[str] = []

        def add(name: str) -> None:
            if name in seen or name in self.builtin:
                return
            seen.append(name)
            for dep in self.deps.get(name, []):
                add(dep)
            for word in self.pre.get(name, []):
                for dep in self.resolve(word):
                    add(dep)

        add(module_name(module))
        return seen


# -- the initrd's files (cpio "newc", compressed or not, concatenated) ---------------------------

CPIO_MAGICS = (b"070701", b"070702")


class InitrdError(ValueError):
    pass


def _decompress(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    if data[:6] == b"\xfd7zXZ\x00" or data[:3] == b"\x5d\x00\x00":
        return lzma.decompress(data)
    if data[:3] == b"BZh":
        return bz2.decompress(data)
    for magic, tool in ((b"\x28\xb5\x2f\xfd", "zstd"), (b"\x02\x21\x4c\x18", "lz4"), (b"\x04\x22\x4d\x18", "lz4")):
        if data[:4] == magic:
            if not shutil.which(tool):
                raise InitrdError(f"the initrd is {tool}-compressed and {tool} is not installed")
            out = subprocess.run([tool, "-dc"], input=data, capture_output=True)
            if out.returncode != 0 and not out.stdout:
                raise InitrdError(f"{tool} -dc failed: {out.stderr.decode(errors='replace')[:200]}")
            return out.stdout
    raise InitrdError(f"not a cpio archive nor a known compression (starts {data[:6].hex()})")


def _cpio(data: bytes, at: int, names: list[str]) -> int:
    """Reads one archive from ``at``; its names into ``names``; where it ends."""
    while True:
        if data[at: at + 6] not in CPIO_MAGICS:
            raise InitrdError(f"bad cpio header at {at}")
        fields = [int(data[at + 6 + 8 * i: at + 14 + 8 * i], 16) for i in range(13)]
        size, namesize = fields[6], fields[11]
        name = data[at + 110: at + 110 + namesize - 1].decode("utf-8", "replace")
        at = (at + 110 + namesize + 3) & ~3
        at = (at + size + 3) & ~3
        if name == "TRAILER!!!":
            return at
        names.append(name)


def initrd_files(blob: bytes) -> list[str]:
    """Every name in the initrd (its archives one after the other, each
    plain or compressed, as the kernel unpacks them)."""
    names: list[str] = []
    data, at = blob, 0
    while at < len(data):
        while at < len(data) and data[at] == 0:
            at += 1
        if at >= len(data):
            break
        if data[at: at + 6] in CPIO_MAGICS:
            at = _cpio(data, at, names)
        else:
            data, at = _decompress(data[at:]), 0
    return names


def initrd_modules(names: list[str]) -> set[str]:
    return {module_name(n) for n in names if re.search(r"\.ko(\.(xz|zst|gz))?$", n)}


# -- the check ------------------------------------------------------------------------------------

#: Devices no device tree names: the card on the controller (the MMC
#: bus's block driver) and the root's file system.
CARD_ALIASES = ("mmc:block", "fs-ext4")


def needs(tree: Tree, mods: Modules, start: Node) -> list[dict]:
    """What the probe of ``start`` waits for, each with its driver."""
    out, seen = [], set()
    todo: list[tuple[Node, str]] = [(start, "sd card")]
    while todo:
        node, via = todo.pop(0)
        node = device(node)
        if node is None or node is tree.root or id(node) in seen:
            continue
        seen.add(id(node))
        loadable, builtin = mods.match(modalias(node)) if node.compatible else ([], [])
        out.append({"node": node.path, "compatible": node.compatible, "via": via,
                    "modules": loadable, "builtin": builtin})
        if builtin and not loadable:
            continue                    # in the kernel from the start
        for prop, provider in suppliers(tree, node):
            if prop == "clocks" and "#clock-cells" in node.props:
                # A clock controller registers its clocks whatever their
                # parents (the clock framework adopts orphans later): its
                # own inputs (on a Pi, the display's DSI clocks) are not
                # what it waits for.
                continue
            todo.append((provider, prop))
        if node.parent is not None and node.parent is not tree.root:
            todo.append((node.parent, "parent"))
    return out


def check_board(dtb: bytes, mods: Modules, in_initrd: set[str]) -> dict:
    """One board's device tree against the initrd: {model, controller,
    needs, modules, missing}."""
    tree = Tree(dtb)
    hosts = tree.sd_controllers()
    result: dict = {"model": tree.model, "controller": [h.path for h in hosts], "needs": [], "modules": [],
                    "missing": []}
    if len(hosts) != 1:
        result["missing"].append(f"{len(hosts)} SD card controllers found, not one")
        return result
    result["needs"] = needs(tree, mods, hosts[0])
    wanted: list[str] = []
    for entry in result["needs"]:
        for module in entry["modules"]:
            wanted += mods.closure(module)
    for alias in CARD_ALIASES:
        loadable, builtin = mods.match(alias)
        result["needs"].append({"node": alias, "compatible": [], "via": "card", "modules": loadable,
                                "builtin": builtin})
        if not loadable and not builtin:
            result["missing"].append(f"no driver for {alias}")
        for module in loadable:
            wanted += mods.closure(module)
    result["modules"] = sorted(set(wanted))
    result["missing"] += sorted(m for m in set(wanted) if m not in in_initrd)
    return result


#: The covered boards (docs/image.md, "Boards") and the device tree each
#: one's firmware loads from the boot partition.
BOARDS = {
    "Pi 3 B": "bcm2837-rpi-3-b.dtb",
    "Pi 3 B+": "bcm2837-rpi-3-b-plus.dtb",
    "Pi 3 A+": "bcm2837-rpi-3-a-plus.dtb",
    "Pi Zero 2 W": "bcm2837-rpi-zero-2-w.dtb",
    "Pi 4 B": "bcm2711-rpi-4-b.dtb",
    "Pi 400": "bcm2711-rpi-400.dtb",
}


def check(dtbs: dict[str, bytes], mods: Modules, initrd: bytes) -> dict:
    """Every covered board against the initrd.  ``dtbs``: the boot
    partition's .dtb files by name.  {"ok", "boards": {board: {...}}}"""
    in_initrd = initrd_modules(initrd_files(initrd))
    boards, ok = {}, True
    for board, name in BOARDS.items():
        if name not in dtbs:
            boards[board] = {"dtb": name, "missing": [f"no {name} on the boot partition"]}
            ok = False
            continue
        found = check_board(dtbs[name], mods, in_initrd)
        found["dtb"] = name
        boards[board] = found
        ok = ok and not found["missing"]
    return {"ok": ok, "initrd_modules": len(in_initrd), "boards": boards}


def summary(result: dict) -> dict:
    """The check's figures in short: per board the modules the initrd must
    hold and what it lacks."""
    return {"ok": result["ok"],
            "boards": {b: {"dtb": r.get("dtb"), "controller": r.get("controller"), "modules": r.get("modules", []),
                           "missing": r["missing"]} for b, r in result["boards"].items()}}


def from_card(card, layout) -> dict:
    """:func:`check` on a card's own files: the device trees and the
    initrd of its boot partition, the module tables of its root
    (``image_check.Card`` gives the layout)."""
    import image_check

    version = layout.kernel_name.removeprefix("vmlinuz-")
    base = f"/usr/lib/modules/{version}"

    def root(name: str) -> bytes:
        return image_check.ext4_read(card, layout.root["start"], f"{base}/{name}") or b""

    mods = Modules(root("modules.alias").decode(errors="replace"), root("modules.builtin.modinfo"),
                   root("modules.dep").decode(errors="replace"), root("modules.softdep").decode(errors="replace"),
                   root("modules.builtin").decode(errors="replace"))
    if not mods.alias or not mods.deps or not mods.builtin_alias:
        raise image_check.ImageError(f"no module tables in the root's {base} (modules.alias, modules.dep, "
                                     "modules.builtin.modinfo)")
    boot = layout.boot["start"]
    dtbs = {name: image_check.fat_read(card, boot, name) for name in layout.dtbs if name in BOARDS.values()}
    return check(dtbs, mods, image_check.fat_read(card, boot, layout.initrd_name))
