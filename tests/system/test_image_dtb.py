"""The image's device trees: SPI on and I2C at 400 kHz written into them
(systemd/image/companion-dtb), since Debian's upstream trees take no dtparam.

The hook runs on a folder standing in for the boot partition, on samples
that carry the nodes of Debian's own trees (paths, compatibles, status,
pins and the Zero 2 W's own pin set-up, as ``dtc`` shows them in
linux-image-6.1.0-*-arm64), and on Debian's real trees where the image
build's cache holds them (``~/.cache/companion-image``).  What comes out is
read back with ``fdtget``, and compared node by node with what went in:
only the intended properties change.  docs/image.md, "SPI and I2C on
Debian's device trees", has the evidence."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "systemd" / "image" / "companion-dtb"
pytestmark = pytest.mark.skipif(shutil.which("dtc") is None or shutil.which("fdtget") is None,
                                reason="needs dtc and fdtget (apt-get install device-tree-compiler)")

GPIO, SPI0, I2C0, I2C1 = "/soc/gpio@7e200000", "/soc/spi@7e204000", "/soc/i2c@7e205000", "/soc/i2c@7e804000"

# The nodes of Debian's trees the hook touches or relies on, as `dtc -I dtb
# -O dts` shows them (bcm2837-rpi-zero-2-w.dtb, bcm2837-rpi-3-b.dtb,
# bcm2711-rpi-4-b.dtb of linux-image-6.1.0-57-arm64): SPI0 disabled with no
# pins and no child; both I2C buses on at 100 kHz; no alias for either; the
# Zero 2 W's GPIO controller claiming gpioout (6) and alt0 (4, 5, 7-11) for itself.
SAMPLE = """/dts-v1/;
/ {
	#address-cells = <1>;
	#size-cells = <1>;
	model = "%(model)s";
	aliases {
		serial0 = "/soc/serial@7e201000";
		serial1 = "/soc/serial@7e215040";
	};
	soc {
		compatible = "simple-bus";
		#address-cells = <1>;
		#size-cells = <1>;
		ranges = <0x7e000000 0x3f000000 0x1000000>;
		gpio@7e200000 {
			compatible = "%(gpio)s";
			reg = <0x7e200000 0xb4>;
			gpio-controller;
			#gpio-cells = <2>;
			pinctrl-names = "default";
			%(hog)s
			i2c0_gpio0: i2c0_gpio0 { brcm,pins = <0 1>; brcm,function = <4>; };
			i2c1_gpio2: i2c1_gpio2 { brcm,pins = <2 3>; brcm,function = <4>; };
			spi0_gpio7 { brcm,pins = <7 8 9 10 11>; brcm,function = <4>; };
			gpioout: gpioout { brcm,pins = <6>; brcm,function = <1>; };
			alt0: alt0 { brcm,pins = <4 5 7 8 9 10 11>; brcm,function = <4>; };
		};
		serial@7e201000 { compatible = "arm,pl011", "arm,primecell"; reg = <0x7e201000 0x200>; };
		serial@7e215040 { compatible = "brcm,bcm2835-aux-uart"; reg = <0x7e215040 0x40>; };
		spi@7e204000 {
			compatible = "brcm,bcm2835-spi";
			reg = <0x7e204000 0x200>;
			#address-cells = <1>;
			#size-cells = <0>;
			status = "disabled";
			dma-names = "tx", "rx";
		};
		i2c@7e205000 {
			compatible = %(i2c)s;
			reg = <0x7e205000 0x200>;
			#address-cells = <1>;
			#size-cells = <0>;
			status = "okay";
			pinctrl-names = "default";
			pinctrl-0 = <&i2c0_gpio0>;
			clock-frequency = <100000>;
		};
		i2c@7e804000 {
			compatible = %(i2c)s;
			reg = <0x7e804000 0x1000>;
			#address-cells = <1>;
			#size-cells = <0>;
			status = "okay";
			pinctrl-names = "default";
			pinctrl-0 = <&i2c1_gpio2>;
			clock-frequency = <100000>;
		};
		i2c@7e805000 {
			compatible = %(i2c)s;
			reg = <0x7e805000 0x1000>;
			#address-cells = <1>;
			#size-cells = <0>;
			status = "okay";
		};
	};
};
"""
BCM2837 = {"gpio": "brcm,bcm2835-gpio", "i2c": '"brcm,bcm2835-i2c"'}
BCM2711 = {"gpio": "brcm,bcm2711-gpio", "i2c": '"brcm,bcm2711-i2c", "brcm,bcm2835-i2c"'}
SAMPLES = {
    "bcm2837-rpi-3-b.dtb": dict(BCM2837, model="Raspberry Pi 3 Model B", hog=""),
    "bcm2837-rpi-zero-2-w.dtb": dict(BCM2837, model="Raspberry Pi Zero 2 W", hog="pinctrl-0 = <&gpioout &alt0>;"),
    "bcm2711-rpi-4-b.dtb": dict(BCM2711, model="Raspberry Pi 4 Model B", hog=""),
}


def load_build():
    loader = importlib.machinery.SourceFileLoader("image_build", str(REPO / "systemd" / "image" / "build"))
    spec = importlib.util.spec_from_loader("image_build", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


COVERED = load_build().COVERED_DTBS


def cached_debian_trees() -> list[Path]:
    """Debian's own trees of the covered boards, where an image build left them."""
    cache = Path(os.environ.get("COMPANION_IMAGE_CACHE") or Path.home() / ".cache" / "companion-image")
    for folder in sorted(cache.glob("base-*/root/usr/lib/linux-image-*-arm64/broadcom")):
        found = [folder / name for name in COVERED if (folder / name).is_file()]
        if len(found) == len(COVERED):
            return found
    return []


def compile_sample(name: str, folder: Path) -> Path:
    source = folder / (name + ".dts")
    source.write_text(SAMPLE % SAMPLES[name])
    out = folder / name
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(out), str(source)], check=True)
    return out


def run_hook(firmware: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(HOOK), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COMPANION_FIRMWARE": str(firmware)})


def get(dtb: Path, node: str, prop: str, kind: str = "s") -> str | None:
    out = subprocess.run(["fdtget", "-t", kind, str(dtb), node, prop], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def children(dtb: Path, node: str) -> list[str]:
    out = subprocess.run(["fdtget", "-l", str(dtb), node], capture_output=True, text=True, check=True)
    return out.stdout.split()


def tree(dtb: Path) -> dict:
    """Every property of the tree, by node path, as dtc prints it."""
    text = subprocess.run(["dtc", "-q", "-I", "dtb", "-O", "dts", str(dtb)], capture_output=True, text=True,
                          check=True).stdout
    nodes: dict = {}
    path: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.endswith("{"):
            name = line[:-1].strip().split(":")[-1].strip()
            path.append("" if name == "/" else name)
            nodes.setdefault("/".join(path) or "/", {})
        elif line == "};":
            path.pop()
        elif line.endswith(";") and not line.startswith("/"):
            name, _, value = line[:-1].partition(" = ")
            nodes["/".join(path) or "/"][name.strip()] = value
    return nodes


def boards() -> list:
    params = [pytest.param(("sample", name), id=f"sample-{name}") for name in SAMPLES]
    params += [pytest.param(("debian", name), id=f"debian-{name}",
                            marks=pytest.mark.skipif(not cached_debian_trees(),
                                                     reason="Debian's trees are not in the image cache"))
               for name in COVERED]
    return params


@pytest.fixture
def board(request, tmp_path):
    """(the tree as it came, the boot partition's copy the hook patches)."""
    kind, name = request.param
    original = tmp_path / "original"
    original.mkdir()
    if kind == "sample":
        source = compile_sample(name, original)
    else:
        source = next(p for p in cached_debian_trees() if p.name == name)
        shutil.copy(source, original / name)
        source = original / name
    firmware = tmp_path / "firmware"
    firmware.mkdir()
    shutil.copy(source, firmware / name)
    return source, firmware / name


@pytest.mark.parametrize("board", boards(), indirect=True)
def test_spi_on_ce0_and_the_header_s_i2c_at_400_khz_as_bus_1(board):
    original, dtb = board
    assert get(original, SPI0, "status") == "disabled" and get(original, I2C1, "clock-frequency", "u") == "100000"
    run = run_hook(dtb.parent, "--check", dtb.name)
    assert run.returncode == 0, run.stdout + run.stderr
    assert get(dtb, SPI0, "status") == "okay"
    assert get(dtb, SPI0 + "/spidev@0", "compatible") == "rohm,dh2228fv"
    assert get(dtb, SPI0 + "/spidev@0", "reg", "u") == "0"
    # SPI0's pins: the group its pinctrl-0 names puts 8-11 (CE0, MISO, MOSI, SCLK) on ALT0.
    handle = get(dtb, SPI0, "pinctrl-0", "u")
    [group] = [g for g in children(dtb, GPIO) if get(dtb, f"{GPIO}/{g}", "phandle", "u") == handle]
    assert get(dtb, f"{GPIO}/{group}", "brcm,pins", "u") == "8 9 10 11"
    assert get(dtb, f"{GPIO}/{group}", "brcm,function", "u") == "4"
    # ... and no group the GPIO controller takes for itself holds one of them
    # (the kernel gives a pin to one owner: SPI0's probe would fail).
    hogs = (get(dtb, GPIO, "pinctrl-0", "u") or "").split()
    for name in children(dtb, GPIO):
        if get(dtb, f"{GPIO}/{name}", "phandle", "u") in hogs:
            assert not {8, 9, 10, 11, 7} & {int(p) for p in get(dtb, f"{GPIO}/{name}", "brcm,pins", "u").split()}
    assert get(dtb, I2C1, "clock-frequency", "u") == "400000" and get(dtb, I2C1, "status") == "okay"
    assert get(dtb, "/aliases", "i2c1") == I2C1 and get(dtb, "/aliases", "i2c0") == I2C0
    assert get(dtb, "/aliases", "spi0") == SPI0


@pytest.mark.parametrize("board", boards(), indirect=True)
def test_nothing_else_in_the_tree_changes(board):
    original, dtb = board
    assert run_hook(dtb.parent).returncode == 0
    before, after = tree(original), tree(dtb)
    changed = {(node, prop) for node in set(before) | set(after)
               for prop in set(before.get(node, {})) | set(after.get(node, {}))
               if before.get(node, {}).get(prop) != after.get(node, {}).get(prop)}
    group = "soc/gpio@7e200000/companion-spi0-gpio8"
    expected = {("aliases", "i2c0"), ("aliases", "i2c1"), ("aliases", "spi0"),
                ("soc/i2c@7e804000", "clock-frequency"),
                ("soc/spi@7e204000", "status"), ("soc/spi@7e204000", "pinctrl-names"),
                ("soc/spi@7e204000", "pinctrl-0"),
                ("soc/spi@7e204000/spidev@0", "compatible"), ("soc/spi@7e204000/spidev@0", "reg"),
                ("soc/spi@7e204000/spidev@0", "spi-max-frequency"),
                (group, "brcm,pins"), (group, "brcm,function"), (group, "phandle"),
                ("soc/gpio@7e200000/alt0", "brcm,pins")}
    assert {(n.lstrip("/"), p) for n, p in changed} == expected
    assert after["/soc/gpio@7e200000/alt0"]["brcm,pins"] == "<0x04 0x05>"


@pytest.mark.parametrize("board", boards(), indirect=True)
def test_run_again_it_changes_nothing(board):
    _, dtb = board
    assert run_hook(dtb.parent).returncode == 0
    once = dtb.read_bytes()
    run = run_hook(dtb.parent, "--check", dtb.name)
    assert run.returncode == 0 and "already" in run.stdout
    assert dtb.read_bytes() == once
    assert sorted(p.name for p in dtb.parent.iterdir()) == [dtb.name], "no file left behind"


def test_a_tree_patched_but_for_the_zero_2_w_s_own_pins_is_patched_again(tmp_path):
    """The Zero 2 W's GPIO controller takes 7-11 for itself: a tree whose SPI0
    is set but whose alt0 still holds them is not taken for done."""
    name = "bcm2837-rpi-zero-2-w.dtb"
    firmware = tmp_path / "firmware"
    firmware.mkdir()
    dtb = compile_sample(name, firmware)
    (firmware / (name + ".dts")).unlink()
    assert run_hook(firmware).returncode == 0
    subprocess.run(["fdtput", "-t", "u", str(dtb), GPIO + "/alt0", "brcm,pins", "4", "5", "7", "8", "9", "10", "11"],
                   check=True)
    run = run_hook(firmware, "--check", name)
    assert run.returncode == 0 and "already" not in run.stdout, run.stdout
    assert get(dtb, GPIO + "/alt0", "brcm,pins", "u") == "4 5"


def test_trees_it_does_not_know_are_left_as_they_are(tmp_path):
    firmware = tmp_path / "firmware"
    firmware.mkdir()
    # A Raspberry Pi OS tree: the firmware applies dtparam to it itself.
    pi_os = compile_sample("bcm2837-rpi-3-b.dtb", firmware)
    subprocess.run(["fdtput", "-c", str(pi_os), "/__overrides__"], check=True)
    subprocess.run(["fdtput", "-t", "s", str(pi_os), "/__overrides__", "spi", "spi0"], check=True)
    # A kernel whose SPI0 moved.
    moved = compile_sample("bcm2711-rpi-4-b.dtb", firmware)
    subprocess.run(["fdtput", "-t", "s", str(moved), SPI0, "compatible", "vendor,other-spi"], check=True)
    for source in firmware.glob("*.dts"):
        source.unlink()
    before = {p.name: p.read_bytes() for p in firmware.iterdir()}
    run = run_hook(firmware)
    assert run.returncode == 0, "a kernel update is never failed over it"
    assert {p.name: p.read_bytes() for p in firmware.iterdir()} == before
    assert "bcm2837-rpi-3-b.dtb has the Raspberry Pi's own overrides" in run.stdout
    assert "bcm2711-rpi-4-b.dtb is not a device tree this knows" in run.stderr
    # The image build's check says no.
    assert run_hook(firmware, "--check", "bcm2711-rpi-4-b.dtb").returncode == 1
    assert run_hook(firmware, "--check", "bcm2837-rpi-zero-2-w.dtb").returncode == 1      # not there


def test_without_dtc_a_kernel_update_still_goes_through(tmp_path):
    firmware = tmp_path / "firmware"
    firmware.mkdir()
    dtb = compile_sample("bcm2837-rpi-3-b.dtb", firmware)
    before = dtb.read_bytes()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "mktemp", "rm", "cat", "basename", "grep"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(bin_dir), "COMPANION_FIRMWARE": str(firmware)}
    run = subprocess.run([str(bin_dir / "sh"), str(HOOK)], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0 and "device-tree-compiler" in run.stderr and dtb.read_bytes() == before
    run = subprocess.run([str(bin_dir / "sh"), str(HOOK), "--check"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert run.returncode == 1


def test_the_hook_runs_after_raspi_firmware_s_wherever_that_copies_the_trees(tmp_path):
    """raspi-firmware's z50-raspi-firmware copies the kernel's trees anew
    (a kernel installed or removed, an initrd made); run-parts runs the
    image's hook after it in each of those folders."""
    build = load_build()
    for folder in build.DTB_HOOK_DIRS:
        parts = tmp_path / folder
        parts.mkdir(parents=True)
        for name in ("z50-raspi-firmware", "initramfs-tools"):
            (parts / name).write_text("#!/bin/sh\n")
            (parts / name).chmod(0o755)
        (parts / build.DTB_HOOK).symlink_to(HOOK)          # a link, as the build makes it
        if shutil.which("run-parts"):
            order = subprocess.run(["run-parts", "--test", str(parts)], capture_output=True, text=True,
                                   check=True).stdout.split()
            assert [Path(p).name for p in order].index(build.DTB_HOOK) \
                > [Path(p).name for p in order].index("z50-raspi-firmware")
        assert sorted(["z50-raspi-firmware", build.DTB_HOOK])[-1] == build.DTB_HOOK
    # Where the real package puts its hook, when a build's root is in the cache.
    cache = Path(os.environ.get("COMPANION_IMAGE_CACHE") or Path.home() / ".cache" / "companion-image")
    for root in cache.glob("base-*/root"):
        places = {str(p.parent.relative_to(root)) for p in root.glob("etc/**/z50-raspi-firmware")}
        if places:
            assert places <= set(build.DTB_HOOK_DIRS)


def test_spidev_binds_the_name_given_in_debian_s_kernel():
    """spidev's table in the kernel the image runs lists "rohm,dh2228fv"
    (checked where the image build's cache holds that kernel)."""
    cache = Path(os.environ.get("COMPANION_IMAGE_CACHE") or Path.home() / ".cache" / "companion-image")
    kernels = sorted(cache.glob("base-*/root/boot/vmlinuz-*-arm64"))
    if not kernels:
        pytest.skip("Debian's arm64 kernel is not in the image cache")
    fragment = HOOK.read_text()
    [compatible] = re.findall(r'compatible = "([^"]+)";', fragment)
    image = kernels[-1].read_bytes()
    if image[:2] == b"\x1f\x8b":
        import gzip

        image = gzip.decompress(image)
    # of_device_id's compatible strings sit together in the kernel's rodata: the
    # name beside spidev's other entries.
    at = image.find(b"\0" + compatible.encode() + b"\0")
    assert at >= 0, compatible
    assert b"lineartechnology,ltc2488" in image[at - 2400:at + 2400]
