"""tests/vm/boot_modules.py without an image: device trees written here in
the .dtb format (a Pi 4's SD path through its firmware's GPIO expander, a
Pi 3's through its DMA controller), module tables as the kernel's depmod
writes them, and initrds as cpio archives, plain, compressed and
concatenated.  The real image's files are checked by
``tests/vm/appliance-vm --image FILE``."""

from __future__ import annotations

import gzip
import lzma
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "vm"))
import boot_modules as bm  # noqa: E402


# -- a small .dtb writer -------------------------------------------------------------------------

def _value(v) -> bytes:
    if v is True:
        return b""
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode() + b"\0"
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return b"".join(x.encode() + b"\0" for x in v)
    if isinstance(v, int):
        v = [v]
    return struct.pack(f">{len(v)}I", *v)


def dtb(root: tuple) -> bytes:
    """``root`` = (name, {prop: value}, [children]); values: True (empty),
    str, [str], int or [int] (cells)."""
    strings: dict[str, int] = {}
    table = bytearray()

    def name_off(name: str) -> int:
        if name not in strings:
            strings[name] = len(table)
            table.extend(name.encode() + b"\0")
        return strings[name]

    out = bytearray()

    def pad():
        while len(out) % 4:
            out.append(0)

    def node(n):
        name, props, children = n
        out.extend(struct.pack(">I", bm.FDT_BEGIN_NODE) + name.encode() + b"\0")
        pad()
        for key, value in props.items():
            data = _value(value)
            out.extend(struct.pack(">III", bm.FDT_PROP, len(data), name_off(key)) + data)
            pad()
        for child in children:
            node(child)
        out.extend(struct.pack(">I", bm.FDT_END_NODE))

    node(root)
    out.extend(struct.pack(">I", bm.FDT_END))
    header = 40
    rsv = bytes(16)
    off_rsv = header
    off_struct = off_rsv + len(rsv)
    off_strings = off_struct + len(out)
    total = off_strings + len(table)
    head = struct.pack(">10I", bm.FDT_MAGIC, total, off_struct, off_strings, off_rsv, 17, 16, 0, len(table), len(out))
    return head + rsv + bytes(out) + bytes(table)


def pi4(*, vcc_gpio_on_expander=True) -> bytes:
    """A Pi 4's SD path, as bcm2711-rpi-4-b.dts has it: emmc2 powered by a
    GPIO regulator and by a fixed one switched through the firmware's GPIO
    expander; the SDHCI (mmcnr) drives the Wi-Fi chip; sdhost is off."""
    soc = ("soc", {"compatible": "simple-bus", "#address-cells": 1, "#size-cells": 1}, [
        ("interrupt-controller@40041000", {"compatible": "arm,gic-400", "interrupt-controller": True,
                                           "#interrupt-cells": 3, "phandle": 1}, []),
        ("cprman@7e101000", {"compatible": "brcm,bcm2711-cprman", "#clock-cells": 1, "phandle": 2}, []),
        ("gpio@7e200000", {"compatible": "brcm,bcm2711-gpio", "#gpio-cells": 2, "gpio-controller": True,
                           "phandle": 3}, [
            ("emmc_gpio34", {"brcm,pins": [34, 35], "phandle": 4}, []),
        ]),
        ("mailbox@7e00b880", {"compatible": "brcm,bcm2835-mbox", "#mbox-cells": 0, "phandle": 5}, []),
        ("dma@7e007000", {"compatible": "brcm,bcm2835-dma", "#dma-cells": 1, "phandle": 6}, []),
        ("mmc@7e202000", {"compatible": "brcm,bcm2835-sdhost", "status": "disabled", "dmas": [6, 13]}, []),
        ("mmc@7e300000", {"compatible": "brcm,bcm2835-sdhci", "status": "okay", "non-removable": True,
                          "pinctrl-0": 4, "interrupts": [0, 126, 4]}, [
            ("wifi@1", {"compatible": "brcm,bcm4329-fmac", "reg": 1}, []),
        ]),
        ("mmc@7e340000", {"compatible": "brcm,bcm2711-emmc2", "status": "okay", "clocks": [2, 51],
                          "interrupts": [0, 126, 4], "vqmmc-supply": 8, "vmmc-supply": 9}, []),
    ])
    firmware = ("firmware", {"compatible": ["raspberrypi,bcm2835-firmware", "simple-mfd"], "mboxes": 5}, [
        ("gpio", {"compatible": "raspberrypi,firmware-gpio", "#gpio-cells": 2, "gpio-controller": True,
                  "phandle": 7}, []),
    ])
    vcc = {"compatible": "regulator-fixed", "regulator-name": "vcc-sd", "phandle": 9}
    if vcc_gpio_on_expander:
        vcc["gpio"] = [7, 6, 0]
    regulators = [
        ("sd_io_1v8_reg", {"compatible": "regulator-gpio", "gpios": [3, 6, 0], "phandle": 8}, []),
        ("sd_vcc_reg", vcc, []),
    ]
    return dtb(("", {"compatible": ["raspberrypi,4-model-b", "brcm,bcm2711"], "model": "Raspberry Pi 4 Model B",
                     "interrupt-parent": 1, "#address-cells": 2, "#size-cells": 1},
                [soc, firmware, *regulators]))


def pi3() -> bytes:
    """A Pi 3's: the sdhost on the card (with its DMA channel), the SDHCI on the Wi-Fi chip."""
    soc = ("soc", {"compatible": "simple-bus"}, [
        ("interrupt-controller@7e00b200", {"compatible": "brcm,bcm2836-armctrl-ic", "#interrupt-cells": 2,
                                           "interrupt-controller": True, "phandle": 1}, []),
        ("cprman@7e101000", {"compatible": "brcm,bcm2835-cprman", "#clock-cells": 1, "phandle": 2,
                             "clocks": [3, 4, 0]}, []),
        ("dsi@7e209000", {"compatible": "brcm,bcm2835-dsi0", "#clock-cells": 1, "phandle": 4,
                          "clocks": [2, 30]}, []),
        ("dma@7e007000", {"compatible": "brcm,bcm2835-dma", "#dma-cells": 1, "phandle": 6}, []),
        ("mmc@7e202000", {"compatible": "brcm,bcm2835-sdhost", "clocks": [2, 20], "dmas": [6, 13],
                          "interrupts": [2, 24]}, []),
        ("mmc@7e300000", {"compatible": "brcm,bcm2835-sdhci", "non-removable": True}, [
            ("wifi@1", {"compatible": "brcm,bcm4329-fmac"}, []),
        ]),
    ])
    osc = ("clk-osc", {"compatible": "fixed-clock", "#clock-cells": 0, "phandle": 3}, [])
    return dtb(("", {"model": "Raspberry Pi 3 Model B", "interrupt-parent": 1}, [soc, osc]))


ALIAS = """\
# Aliases extracted from modules themselves.
alias of:N*T*Cbrcm,bcm2711-emmc2C* sdhci_iproc
alias of:N*T*Cbrcm,bcm2711-emmc2 sdhci_iproc
alias of:N*T*Cbrcm,bcm2835-sdhciC* sdhci_iproc
alias of:N*T*Cbrcm,bcm2835-sdhost bcm2835
alias of:N*T*Cbrcm,bcm2835-sdhostC* bcm2835
alias of:N*T*Cregulator-fixed fixed
alias of:N*T*Cregulator-gpio gpio_regulator
alias of:N*T*Craspberrypi,firmware-gpio gpio_raspberrypi_exp
alias of:N*T*Cbrcm,bcm2835-dsi0 vc4
alias of:N*T*Cbrcm,bcm2835-dma bcm2835_dma
alias of:N*T*Cbrcm,bcm4329-fmac brcmfmac
alias mmc:block mmc_block
alias fs-ext4 ext4
alias crypto-crc32c crc32c_generic
alias crc32c crc32c_generic
"""
BUILTIN = b"\0".join(x.encode() for x in [
    "pinctrl_bcm2835.alias=of:N*T*Cbrcm,bcm2711-gpio", "pinctrl_bcm2835.alias=of:N*T*Cbrcm,bcm2835-gpio",
    "clk_bcm2835.alias=of:N*T*Cbrcm,bcm2711-cprman", "clk_bcm2835.alias=of:N*T*Cbrcm,bcm2835-cprman",
    "raspberrypi.alias=of:N*T*Craspberrypi,bcm2835-firmware", "bcm2835_mailbox.alias=of:N*T*Cbrcm,bcm2835-mbox",
    "bcm2835_mailbox.license=GPL",
]) + b"\0"
DEP = """\
kernel/drivers/mmc/host/sdhci-iproc.ko.xz: kernel/drivers/mmc/host/sdhci-pltfm.ko.xz kernel/drivers/mmc/host/sdhci.ko.xz kernel/drivers/mmc/core/mmc_core.ko.xz
kernel/drivers/mmc/host/sdhci-pltfm.ko.xz: kernel/drivers/mmc/host/sdhci.ko.xz kernel/drivers/mmc/core/mmc_core.ko.xz
kernel/drivers/mmc/host/sdhci.ko.xz: kernel/drivers/mmc/core/mmc_core.ko.xz
kernel/drivers/mmc/host/bcm2835.ko.xz: kernel/drivers/mmc/core/mmc_core.ko.xz
kernel/drivers/mmc/core/mmc_core.ko.xz:
kernel/drivers/mmc/core/mmc_block.ko.xz: kernel/drivers/mmc/core/mmc_core.ko.xz
kernel/drivers/regulator/fixed.ko.xz:
kernel/drivers/regulator/gpio-regulator.ko.xz:
kernel/drivers/gpio/gpio-raspberrypi-exp.ko.xz:
kernel/drivers/dma/bcm2835-dma.ko.xz:
kernel/drivers/gpu/drm/vc4/vc4.ko.xz:
kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz kernel/fs/mbcache.ko.xz kernel/lib/crc16.ko.xz
kernel/fs/jbd2/jbd2.ko.xz:
kernel/fs/mbcache.ko.xz:
kernel/lib/crc16.ko.xz:
kernel/crypto/crc32c_generic.ko.xz:
"""
SOFTDEP = "# Soft dependencies extracted from modules themselves.\nsoftdep ext4 pre: crc32c\n"


def modules(*, dma_builtin=False) -> bm.Modules:
    alias, dep, builtin = ALIAS, DEP, BUILTIN
    if dma_builtin:
        alias = alias.replace("alias of:N*T*Cbrcm,bcm2835-dma bcm2835_dma\n", "")
        dep = dep.replace("kernel/drivers/dma/bcm2835-dma.ko.xz:\n", "")
        builtin += b"bcm2835_dma.alias=of:N*T*Cbrcm,bcm2835-dma\0"
    return bm.Modules(alias, builtin, dep, SOFTDEP)


def cpio(names: list[str]) -> bytes:
    """A cpio "newc" archive holding empty files (and their folders) by these names."""
    out = bytearray()

    def entry(name: str, mode: int, data: bytes = b"") -> None:
        raw = name.encode() + b"\0"
        fields = [0, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0]
        out.extend(b"070701" + b"".join(f"{v:08x}".encode() for v in fields) + raw)
        while len(out) % 4:
            out.append(0)
        out.extend(data)
        while len(out) % 4:
            out.append(0)

    for name in names:
        entry(name, 0o100644, b"\x7fELF")
    entry("TRAILER!!!", 0)
    return bytes(out) + bytes(512 - len(out) % 512)


BASE = "usr/lib/modules/6.1.0-99-arm64/kernel/"
NEEDED_PI4 = ["drivers/mmc/host/sdhci-iproc.ko.xz", "drivers/mmc/host/sdhci-pltfm.ko.xz",
              "drivers/mmc/host/sdhci.ko.xz", "drivers/mmc/core/mmc_core.ko.xz", "drivers/mmc/core/mmc_block.ko.xz",
              "drivers/regulator/fixed.ko.xz", "drivers/regulator/gpio-regulator.ko.xz", "fs/ext4/ext4.ko.xz",
              "fs/jbd2/jbd2.ko.xz", "fs/mbcache.ko.xz", "lib/crc16.ko.xz", "crypto/crc32c_generic.ko.xz"]


def initrd_with(rel: list[str]) -> set[str]:
    return bm.initrd_modules(bm.initrd_files(gzip.compress(cpio(["init", *(BASE + r for r in rel)]))))


# -- the device tree ------------------------------------------------------------------------------

def test_a_written_tree_reads_back_with_its_paths_properties_and_phandles():
    tree = bm.Tree(pi4())
    assert tree.model == "Raspberry Pi 4 Model B"
    emmc2 = next(n for n in tree.root.walk() if n.name == "mmc@7e340000")
    assert emmc2.path == "/soc/mmc@7e340000"
    assert emmc2.compatible == ["brcm,bcm2711-emmc2"] and emmc2.cells("clocks") == [2, 51]
    assert tree.by_phandle[7].path == "/firmware/gpio"
    assert tree.root.compatible == ["raspberrypi,4-model-b", "brcm,bcm2711"]
    assert bm.modalias(tree.by_phandle[7]).startswith("of:NgpioT") and \
        bm.modalias(tree.by_phandle[7]).endswith("Craspberrypi,firmware-gpio")


def test_a_blob_that_is_no_device_tree_is_refused():
    with pytest.raises(bm.FdtError):
        bm.parse_fdt(b"\x00" * 64)
    with pytest.raises(bm.FdtError):
        bm.parse_fdt(pi3()[:100])               # cut short: its header says more


def test_the_card_is_the_removable_host_not_the_wifi_chips_nor_a_disabled_one():
    assert [n.path for n in bm.Tree(pi4()).sd_controllers()] == ["/soc/mmc@7e340000"]
    assert [n.path for n in bm.Tree(pi3()).sd_controllers()] == ["/soc/mmc@7e202000"]


def test_suppliers_follow_each_providers_cell_count():
    tree = bm.Tree(pi4())
    fixed = tree.by_phandle[9]
    assert [(p, n.path) for p, n in bm.suppliers(tree, fixed)] == [("gpio", "/firmware/gpio")]
    emmc2 = next(n for n in tree.root.walk() if n.name == "mmc@7e340000")
    got = {(p, n.path) for p, n in bm.suppliers(tree, emmc2)}
    # the interrupt controller through the root's interrupt-parent
    assert got == {("clocks", "/soc/cprman@7e101000"), ("vqmmc-supply", "/sd_io_1v8_reg"),
                   ("vmmc-supply", "/sd_vcc_reg"), ("interrupt-parent", "/soc/interrupt-controller@40041000")}


# -- the module tables ----------------------------------------------------------------------------

def test_aliases_match_as_modprobe_does_and_built_in_drivers_are_told_apart():
    mods = modules()
    assert mods.match("of:Nmmc@7e340000T(null)Cbrcm,bcm2711-emmc2") == (["sdhci_iproc"], [])
    assert mods.match("of:NgpioT(null)Cbrcm,bcm2711-gpio") == ([], ["pinctrl_bcm2835"])
    assert mods.match("of:NfooT(null)Csimple-bus") == ([], [])
    assert mods.closure("ext4") == ["ext4", "jbd2", "mbcache", "crc16", "crc32c_generic"]
    assert mods.closure("gpio-regulator") == ["gpio_regulator"]


# -- the initrd -----------------------------------------------------------------------------------

def test_initrd_names_from_plain_compressed_and_concatenated_archives():
    early = cpio(["kernel", "kernel/x86", "kernel/x86/microcode.bin"])
    main = cpio(["init", BASE + "drivers/mmc/host/bcm2835.ko.xz", BASE + "fs/ext4/ext4.ko"])
    for blob in (main, gzip.compress(main), lzma.compress(main), early + gzip.compress(main),
                 early + lzma.compress(main, format=lzma.FORMAT_XZ)):
        names = bm.initrd_files(blob)
        assert BASE + "fs/ext4/ext4.ko" in names
        assert bm.initrd_modules(names) == {"bcm2835", "ext4"}
    with pytest.raises(bm.InitrdError):
        bm.initrd_files(b"this is no initrd")


@pytest.mark.skipif(shutil.which("zstd") is None, reason="needs zstd")
def test_a_zstd_initrd_as_debian_makes_it():
    main = cpio(["init", BASE + "drivers/mmc/host/sdhci-iproc.ko.zst"])
    packed = subprocess.run(["zstd", "-q", "-c"], input=main, capture_output=True, check=True).stdout
    assert bm.initrd_modules(bm.initrd_files(packed)) == {"sdhci_iproc"}


# -- the check ------------------------------------------------------------------------------------

def test_a_pi4_initrd_without_the_firmwares_gpio_expander_is_caught():
    """The Pi 4's card is powered through a regulator switched by the
    firmware's GPIO expander: without its module, the regulator never
    probes, nor emmc2, nor the root."""
    found = bm.check_board(pi4(), modules(), initrd_with(NEEDED_PI4))
    assert found["controller"] == ["/soc/mmc@7e340000"]
    assert found["missing"] == ["gpio_raspberrypi_exp"]
    assert "vc4" not in found["modules"] and "brcmfmac" not in found["modules"]
    ok = bm.check_board(pi4(), modules(), initrd_with(NEEDED_PI4 + ["drivers/gpio/gpio-raspberrypi-exp.ko.xz"]))
    assert ok["missing"] == []
    assert {"sdhci_iproc", "mmc_block", "ext4", "crc32c_generic", "fixed", "gpio_regulator",
            "gpio_raspberrypi_exp"} <= set(ok["modules"])


def test_each_missing_piece_of_the_pi4_path_is_named():
    full = NEEDED_PI4 + ["drivers/gpio/gpio-raspberrypi-exp.ko.xz"]
    for gone in full:
        found = bm.check_board(pi4(), modules(), initrd_with([r for r in full if r != gone]))
        assert found["missing"] == [bm.module_name(gone)], gone


def test_a_pi3_needs_its_dma_driver_unless_built_in_and_never_the_display():
    have = ["drivers/mmc/host/bcm2835.ko.xz", "drivers/mmc/core/mmc_core.ko.xz", "drivers/mmc/core/mmc_block.ko.xz",
            "fs/ext4/ext4.ko.xz", "fs/jbd2/jbd2.ko.xz", "fs/mbcache.ko.xz", "lib/crc16.ko.xz",
            "crypto/crc32c_generic.ko.xz"]
    assert bm.check_board(pi3(), modules(), initrd_with(have))["missing"] == ["bcm2835_dma"]
    found = bm.check_board(pi3(), modules(dma_builtin=True), initrd_with(have))
    assert found["missing"] == []
    # cprman is built in: what it points at (the display's DSI clock) is not followed
    assert "vc4" not in found["modules"]


def test_a_clock_controllers_own_inputs_are_not_what_it_waits_for():
    """Debian's 6.1 records no device-table alias for a built-in driver:
    cprman is then "no loadable module" and the walk goes through it, but
    not into its input clocks (the display's DSI, vc4's)."""
    mods = modules(dma_builtin=True)
    mods.builtin_alias = [(pat, m) for pat, m in mods.builtin_alias if m != "clk_bcm2835"]
    have = ["drivers/mmc/host/bcm2835.ko.xz", "drivers/mmc/core/mmc_core.ko.xz", "drivers/mmc/core/mmc_block.ko.xz",
            "fs/ext4/ext4.ko.xz", "fs/jbd2/jbd2.ko.xz", "fs/mbcache.ko.xz", "lib/crc16.ko.xz",
            "crypto/crc32c_generic.ko.xz"]
    found = bm.check_board(pi3(), mods, initrd_with(have))
    assert "/soc/cprman@7e101000" in [n["node"] for n in found["needs"]]
    assert "/soc/dsi@7e209000" not in [n["node"] for n in found["needs"]]
    assert found["missing"] == []


def test_every_covered_board_must_have_its_device_tree():
    blob = gzip.compress(cpio(["init", *(BASE + r for r in NEEDED_PI4)]))
    result = bm.check({"bcm2711-rpi-4-b.dtb": pi4()}, modules(), blob)
    assert not result["ok"]
    assert result["boards"]["Pi 3 B"]["missing"] == ["no bcm2837-rpi-3-b.dtb on the boot partition"]
    assert result["boards"]["Pi 4 B"]["missing"] == ["gpio_raspberrypi_exp"]
