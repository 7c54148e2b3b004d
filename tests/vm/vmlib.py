"""The test VM: a Debian bookworm image built from Debian's packages, booted
under QEMU (TCG), and a way in as root through a command runner on a
virtio-serial port (guest_agent.py).  Used by ``appliance-vm``; the
interface is described in README.md.

Standard library only: it runs with the host's ``python3``.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import lossy_disk

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = Path(os.environ.get("COMPANION_VM_CACHE") or Path.home() / ".cache" / "companion-vm")
SUITE = "bookworm"
MIRROR = os.environ.get("COMPANION_VM_MIRROR", "http://deb.debian.org/debian")
# Bump when the way the image is made changes (the cache key includes it).
IMAGE_REV = "2"
DISK_SIZE = "4G"
AGENT_PORT = "companion.agent"
GUEST_PYTHON = "3.11"           # bookworm's python3

ARCHES = {
    "amd64": {
        "qemu": "qemu-system-x86_64",
        "machine": ["-machine", "q35"],
        "console": "ttyS0",
        "append": " no_timer_check",
        "platforms": ["manylinux_2_36_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                      "manylinux_2_28_x86_64", "linux_x86_64"],
    },
    "arm64": {
        "qemu": "qemu-system-aarch64",
        "machine": ["-machine", "virt", "-cpu", "cortex-a72"],
        "console": "ttyAMA0",
        "platforms": ["manylinux_2_36_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64",
                      "manylinux_2_28_aarch64", "linux_aarch64"],
    },
}


def say(*parts) -> None:
    print(time.strftime("%H:%M:%S"), *parts, flush=True)


def packages(arch: str) -> list[str]:
    """packages.txt's names for ``arch`` (a line "arm64: ..." is for arm64 only)."""
    names = []
    for line in (HERE / "packages.txt").read_text().splitlines():
        line = line.split("#", 1)[0].replace("ARCH", arch)
        only, sep, rest = line.partition(":")
        if sep and only.strip() in ARCHES:
            if only.strip() != arch:
                continue
            line = rest
        names += line.split()
    return names


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


# -- the image ---------------------------------------------------------------------------------

class Image:
    """A cached, bootable image: its kernel, initrd and root file system."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.kernel = folder / "vmlinuz"
        self.initrd = folder / "initrd.img"
        self.disk = folder / "root.raw"

    def ready(self) -> bool:
        return all(p.exists() for p in (self.kernel, self.initrd, self.disk, self.folder / "done"))


def image_key(arch: str) -> str:
    return _digest(IMAGE_REV, SUITE, MIRROR, arch, " ".join(packages(arch)),
                   (HERE / "guest_agent.py").read_bytes(), AGENT_UNIT, INITRD_MODULES)


# The initrd holds only what finds and mounts this VM's root: Debian's default
# (MODULES=most) is a 36 MB initrd that the emulated kernel unpacks at every
# boot (about 10 s of each one under TCG) and that takes mkinitramfs most of a
# minute to make.  The flashable image (systemd/image/build) lists its own.
INITRD_MODULES = ["virtio_pci", "virtio_blk", "crc32c_generic", "ext4"]
_INITRD_HOOK = ('mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d" && '
                'echo MODULES=list > "$1/etc/initramfs-tools/conf.d/companion-vm" && '
                'printf "%s\\n" ' + " ".join(INITRD_MODULES) + ' > "$1/usr/share/initramfs-tools/modules.d/companion-vm"')


_AGENT_DEVICE = "dev-virtio\\x2dports-" + AGENT_PORT + ".device"
AGENT_UNIT = f"""[Unit]
Description=companion test VM: command runner on virtio-serial (tests/vm only)
DefaultDependencies=no
BindsTo={_AGENT_DEVICE}
After={_AGENT_DEVICE}

[Service]
ExecStart=/usr/bin/python3 /usr/local/sbin/companion-vm-agent
Restart=always
RestartSec=1

[Install]
WantedBy=sysinit.target
"""


def build_image(arch: str) -> Image:
    """The image for ``arch``, from the cache or built now (a few minutes)."""
    key = image_key(arch)
    image = Image(CACHE / f"image-{arch}-{key}")
    if image.ready():
        return image
    shutil.rmtree(image.folder, ignore_errors=True)
    image.folder.mkdir(parents=True)
    root = image.folder / "root"
    started = time.monotonic()
    say(f"vm: building the {arch} image (Debian {SUITE}, cache {image.folder})")
    if arch == "amd64" or _native(arch):
        # The hook runs before the kernel is installed: its initrd is made once, listed.
        subprocess.run(["mmdebstrap", "--variant=apt", f"--architectures={arch}",
                        "--include=" + ",".join(packages(arch)), "--essential-hook=" + _INITRD_HOOK,
                        SUITE, str(root), MIRROR],
                       check=True, stdout=subprocess.DEVNULL)
        _customise(root, arch)
        _mkfs(root, image.disk)
        _copy_boot(root, image)
    else:
        _build_foreign(arch, root, image)
    shutil.rmtree(root, ignore_errors=True)
    (image.folder / "done").write_text(f"{time.monotonic() - started:.0f} s\n")
    say(f"vm: image built in {time.monotonic() - started:.0f} s")
    # Older images of this arch are stale: their inputs changed.
    for old in CACHE.glob(f"image-{arch}-*"):
        if old != image.folder:
            shutil.rmtree(old, ignore_errors=True)
    return image


def _native(arch: str) -> bool:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine) == arch


def _customise(root: Path, arch: str) -> None:
    """What a Pi's image has and a bare debootstrap lacks: a host name, an
    fstab, and (tests only) the command runner."""
    (root / "etc/hostname").write_text("companion-vm\n")
    hosts = (root / "etc/hosts")
    hosts.write_text("127.0.0.1\tlocalhost\n127.0.1.1\tcompanion-vm\n::1\tlocalhost ip6-localhost\n")
    (root / "etc/fstab").write_text("/dev/vda / ext4 rw,errors=remount-ro 0 1\n")
    agent = root / "usr/local/sbin/companion-vm-agent"
    agent.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "guest_agent.py", agent)
    agent.chmod(0o755)
    unit = root / "etc/systemd/system/companion-vm-agent.service"
    unit.write_text(AGENT_UNIT)
    wants = root / "etc/systemd/system/sysinit.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / unit.name).unlink(missing_ok=True)
    (wants / unit.name).symlink_to("/etc/systemd/system/companion-vm-agent.service")
    # An empty root password would be a hole on a real box; this one only
    # ever listens on a virtio-serial port and a forwarded loopback port.
    if arch == "amd64" or _native(arch):
        subprocess.run(["chroot", str(root), "passwd", "-d", "root"], check=False, stdout=subprocess.DEVNULL)
    (root / "mnt/payload").mkdir(parents=True, exist_ok=True)


def _mkfs(root: Path, disk: Path) -> None:
    disk.unlink(missing_ok=True)
    subprocess.run(["truncate", "-s", DISK_SIZE, str(disk)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-L", "root", "-d", str(root), str(disk)], check=True)


def _copy_boot(root: Path, image: Image) -> None:
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    initrds = sorted((root / "boot").glob("initrd.img-*"))
    if not kernels or not initrds:
        raise RuntimeError(f"no kernel or initrd in {root}/boot")
    shutil.copy(kernels[-1], image.kernel)
    shutil.copy(initrds[-1], image.initrd)


# -- a foreign architecture (arm64 on an amd64 host, no binfmt/qemu-user) -------------------
#
# debootstrap's first stage (download and unpack, on the host); then the
# image boots once under QEMU into a tiny busybox initramfs that mounts it and
# runs debootstrap's second stage (every package's scripts, as arm64
# processes); then the real kernel and initrd are read back out of the image
# with debugfs (no loop mount).

STAGE_MODULES = ["virtio_pci", "virtio_blk", "crc32c_generic", "ext4"]

STAGE_INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do insmod /modules/$m.ko; done
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 1; done
mkdir -p /newroot && mount -t ext4 /dev/vda /newroot
umount /proc /sys /dev
exec switch_root /newroot /stage2.sh
"""

STAGE2 = """#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
/debootstrap/debootstrap --second-stage && echo STAGE2-OK
rm -f /stage2.sh
sync
mount -t proc proc /proc 2>/dev/null    # debootstrap unmounted it
echo 1 > /proc/sys/kernel/sysrq; echo o > /proc/sysrq-trigger
sleep 60
"""


def _module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        import lzma
        data = lzma.decompress(data)
    return data


def _module_depends(path: Path) -> str:
    """The ``depends=`` of a kernel module's .modinfo section (no modinfo needed)."""
    data = _module_bytes(path)
    at = data.find(b"\0depends=")
    if at < 0:
        return ""
    start = at + len(b"\0depends=")
    return data[start:data.index(b"\0", start)].decode()


def _build_foreign(arch: str, root: Path, image: Image) -> None:
    subprocess.run(["debootstrap", "--foreign", f"--arch={arch}", "--variant=minbase",
                    "--include=" + ",".join(packages(arch) + ["busybox-static"]), SUITE, str(root), MIRROR],
                   check=True, stdout=subprocess.DEVNULL)
    _customise(root, arch)
    (root / "stage2.sh").write_text(STAGE2)
    (root / "stage2.sh").chmod(0o755)
    archives = root / "var/cache/apt/archives"
    work = image.folder / "stage"
    work.mkdir(parents=True, exist_ok=True)
    kernel_deb = sorted(archives.glob("linux-image-[0-9]*.deb"))[-1]
    subprocess.run(["dpkg-deb", "-x", str(kernel_deb), str(work / "kernel")], check=True)
    subprocess.run(["dpkg-deb", "-x", str(sorted(archives.glob("busybox-static_*.deb"))[-1]), str(work / "bb")],
                   check=True)
    version = next((work / "kernel/lib/modules").iterdir()).name
    moddir = work / "kernel/lib/modules" / version
    paths = {p.name.split(".ko")[0].replace("-", "_"): p for p in moddir.rglob("*.ko*")}
    order: list[str] = []

    def need(name: str) -> None:
        name = name.replace("-", "_")
        if name in order or name not in paths:
            return
        for dep in filter(None, _module_depends(paths[name]).split(",")):
            need(dep)
        order.append(name)

    for name in STAGE_MODULES:
        need(name)
    initramfs = work / "initramfs"
    for d in ("bin", "modules", "proc", "sys", "dev", "newroot"):
        (initramfs / d).mkdir(parents=True, exist_ok=True)
    shutil.copy(work / "bb/bin/busybox", initramfs / "bin/busybox")
    for name in order:
        (initramfs / "modules" / f"{name}.ko").write_bytes(_module_bytes(paths[name]))
    (initramfs / "modules.order").write_text("\n".join(order) + "\n")
    (initramfs / "init").write_text(STAGE_INIT)
    (initramfs / "init").chmod(0o755)
    cpio = work / "stage.cpio"
    files = subprocess.run(["find", "."], cwd=initramfs, capture_output=True, check=True).stdout
    with open(cpio, "wb") as out:
        subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=initramfs, input=files, stdout=out, check=True)
    _mkfs(root, image.disk)
    say(f"vm: debootstrap's second stage in QEMU ({arch}, emulated: slow)")
    console = image.folder / "stage2-console.log"
    cmd = [ARCHES[arch]["qemu"], *ARCHES[arch]["machine"], "-accel", "tcg,thread=multi", "-smp", "2",
           "-m", "1024", "-display", "none", "-monitor", "none", "-no-reboot", "-serial", f"file:{console}",
           "-kernel", str(sorted((work / "kernel/boot").glob("vmlinuz-*"))[-1]), "-initrd", str(cpio),
           "-append", f"console={ARCHES[arch]['console']} rw panic=-1",
           "-drive", f"file={image.disk},format=raw,if=virtio,cache=writeback", "-nic", "none"]
    subprocess.run(cmd, check=True, timeout=4 * 3600)
    if "STAGE2-OK" not in console.read_text(errors="replace"):
        raise RuntimeError(f"debootstrap's second stage failed: see {console}")
    for name, dest in (("vmlinuz", image.kernel), ("initrd.img", image.initrd)):
        subprocess.run(["debugfs", "-R", f"dump /boot/{name}-{version} {dest}", str(image.disk)],
                       check=True, capture_output=True)
        if not dest.exists() or dest.stat().st_size == 0:
            raise RuntimeError(f"no /boot/{name}-{version} in the image")
    shutil.rmtree(work, ignore_errors=True)


# -- what the guest installs: the repository and a wheelhouse --------------------------------

def project_requirements() -> list[str]:
    """The project's dependencies and its pi extra, read from pyproject.toml."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    build = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    return list(project["dependencies"]) + list(project["optional-dependencies"].get("pi", [])) + \
        list(build) + ["pip"]


def wheelhouse(arch: str) -> Path:
    """Wheels for the guest's Python (3.11, glibc 2.36) of everything
    install.sh's pip needs, downloaded from PyPI once and cached, so that
    the guest installs offline (it has no route anywhere)."""
    reqs = project_requirements()
    lock = REPO / "requirements.lock"
    folder = CACHE / f"wheels-{arch}-{_digest(arch, GUEST_PYTHON, *reqs, lock.read_text())}"
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    say(f"vm: downloading wheels for {arch} into {folder}")
    machine = {"amd64": "x86_64", "arm64": "aarch64"}[arch]
    platform = []
    # bookworm's glibc is 2.36: every manylinux tag up to it (lgpio's is 2_34).
    for tag in [f"manylinux_2_{minor}_{machine}" for minor in range(17, 37)] + ARCHES[arch]["platforms"]:
        platform += ["--platform", tag]
    # Environment markers are evaluated for the guest's machine, not ours.
    marked = [r for r in reqs if "platform_machine" not in r or f"'{machine}'" in r]
    binary = [r.split(";")[0] for r in marked if not r.lower().startswith("rpi.gpio")]
    source = [r.split(";")[0] for r in marked if r.lower().startswith("rpi.gpio")]
    # Exactly the lock's versions: install.sh installs with it as constraints,
    # offline, and an update bundle made from these wheels carries over what
    # is the same (the lock's pip included).
    pip = [sys.executable, "-m", "pip", "download", "-q", "--dest", str(folder), "--isolated",
           "--index-url", "https://pypi.org/simple", "-c", str(lock)]
    subprocess.run(pip + ["--only-binary=:all:", "--python-version", GUEST_PYTHON, "--implementation", "cp",
                          "--abi", "cp311", "--abi", "abi3", "--abi", "none", *platform, *binary], check=True)
    if source:      # sdist only (RPi.GPIO): built in the guest
        subprocess.run(pip + ["--no-deps", "--no-binary=:all:", *source], check=True)
    (folder / "done").write_text("\n".join(reqs) + "\n")
    return folder


def git_files() -> list[str]:
    run = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True)
    return [f for f in run.stdout.decode().split("\0") if f and (REPO / f).exists()]


def payload_disk(arch: str, out: Path) -> Path:
    """A small ext4 disk with the repository as a clone has it (``git
    ls-files``, the working tree's contents) in /repo and the wheels in
    /wheels; the guest mounts it read-only."""
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        top = Path(tmp)
        for name in git_files():
            dest = top / "repo" / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest, follow_symlinks=False)
        shutil.copytree(wheelhouse(arch), top / "wheels")
        out.unlink(missing_ok=True)
        subprocess.run(["truncate", "-s", "512M", str(out)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-L", "payload", "-d", str(top), str(out)], check=True)
    return out


# -- QEMU and the agent --------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GuestError(RuntimeError):
    pass


class BootPanic(GuestError):
    """The guest's kernel panicked before its agent answered."""

    #: Panics of the emulation, not of the system under test: TCG on a loaded
    #: host can miss the kernel's timer check (seen once here, before
    #: ``no_timer_check``).  Any other panic is a finding.
    EMULATION = ("IO-APIC + timer doesn't work",)

    @property
    def of_the_emulation(self) -> bool:
        return any(mark in str(self) for mark in self.EMULATION)


class Result:
    def __init__(self, answer: dict):
        self.rc = answer.get("rc")
        self.stdout = answer.get("stdout", "")
        self.stderr = answer.get("stderr", "")
        self.timed_out = answer.get("timed_out", False)
        self.error = answer.get("error")
        self.data = base64.b64decode(answer["data_b64"]) if "data_b64" in answer else None

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def __repr__(self) -> str:
        return f"Result(rc={self.rc}, stdout={self.stdout[-300:]!r}, stderr={self.stderr[-300:]!r})"



def http_request(port: int, method: str, path: str, body=None, headers: dict | None = None,
                 timeout: float = 10) -> tuple[int, bytes]:
    """One request to a box through its forwarded port on this host: a JSON
    body (an object), or bytes as a phone's page sends a file (its headers
    say the type); the status and the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        hdrs = dict(headers or {})
        if isinstance(body, bytes):
            data = body
        else:
            data = json.dumps(body).encode() if body is not None else None
            if data is not None:
                hdrs["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class VM:
    """One boot of the image: ``start()``, then ``run``/``sh``/``put``/``get``
    as root in the guest, ``http`` through the forwarded port, and either
    ``poweroff()`` or ``cut()`` (SIGKILL of QEMU: a power cut).

    The root disk is an SD card with a volatile write cache
    (``lossy_disk.py``, QEMU on ``cache=none``): at a cut it loses every
    write the guest had not flushed, or (one cut in two, drawn from
    ``disk_seed``) keeps a random subset of them.  ``disk_model="writeback"``
    is the old model (QEMU's own cache: every write that reached QEMU
    survives), an operating system crash rather than a power cut."""

    DISK_MODELS = ("sd-card", "writeback")

    def __init__(self, arch: str, image: Image, disk: Path, payload: Path, workdir: Path,
                 *, port: int | None = None, memory: int = 1024, extra_args: list[str] | None = None,
                 disk_model: str = "sd-card", disk_seed: int | None = None):
        if disk_model not in self.DISK_MODELS:
            raise ValueError(f"disk model {disk_model!r}: one of {self.DISK_MODELS}")
        self.arch, self.image, self.disk, self.payload, self.workdir = arch, image, disk, payload, workdir
        self.disk_model = disk_model
        self.disk_seed = random.randrange(2**32) if disk_seed is None else disk_seed
        self._disk_rng = random.Random(self.disk_seed)
        self.lossy: lossy_disk.LossyDisk | None = None
        self.cuts: list[dict] = []      # what each cut did to the card's cache
        self.poweroffs_cut = 0          # power-offs that did not end by themselves
        self.port = port or free_port()
        self.memory = memory
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen | None = None
        self.boots = 0
        self._sock: socket.socket | None = None
        self._answers: dict = {}
        self._cond = threading.Condition()
        self._next_id = 0
        self.hello: dict | None = None
        self.started_at = 0.0

    # -- life ------------------------------------------------------------------------------------
    def start(self, *, link: bool = True, nic: bool = True, cmdline: str = "") -> None:
        """Boot.  ``link=False``: the network card is there with its cable
        out (no carrier) until ``set_link(True)``; ``nic=False``: no card;
        ``cmdline``: more words on the kernel's command line."""
        arch = ARCHES[self.arch]
        self.boots += 1
        self.agent_path = self.workdir / "agent.sock"
        self.qmp_path = self.workdir / "qmp.sock"
        for p in (self.agent_path, self.qmp_path):
            p.unlink(missing_ok=True)
        self.console = self.workdir / f"console-{self.boots}.log"
        # no_timer_check: under TCG on a loaded host the kernel's check of the
        # IO-APIC timer can time out and panic ("IO-APIC + timer doesn't
        # work"); the check is for broken boards, not for this virtual one.
        append = f"console={arch['console']} root=/dev/vda rw quiet" + arch.get("append", "")
        if cmdline:
            append += " " + cmdline
        if self.disk_model == "sd-card":
            if self.lossy is None:
                self.lossy = lossy_disk.LossyDisk(self.disk, self.workdir / "root.nbd")
            # cache=none: QEMU holds nothing back; the guest's flushes reach
            # the card as NBD_CMD_FLUSH.
            root = f"file=nbd+unix:///?socket={self.lossy.sock_path},format=raw,if=virtio,cache=none"
        else:
            root = f"file={self.disk},format=raw,if=virtio,cache=writeback"
        cmd = [arch["qemu"], *arch["machine"], "-accel", "tcg,thread=multi", "-smp", "2", "-m", str(self.memory),
               "-display", "none", "-monitor", "none", "-serial", f"file:{self.console}",
               "-kernel", str(self.image.kernel), "-initrd", str(self.image.initrd), "-append", append,
               "-drive", root,
               "-drive", f"file={self.payload},format=raw,if=virtio,readonly=on",
               "-device", "virtio-serial-pci",
               "-chardev", f"socket,id=agent,path={self.agent_path},server=on,wait=off",
               "-device", f"virtserialport,chardev=agent,name={AGENT_PORT}",
               "-qmp", f"unix:{self.qmp_path},server=on,wait=off", "-S",
               "-device", "virtio-rng-pci"]
        if nic:
            # restrict=on: the guest reaches nothing (no host, no internet);
            # only the forwarded port comes in.
            cmd += ["-netdev", f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{self.port}-:8000",
                    "-device", "virtio-net-pci,netdev=net0,id=nic0"]
        else:
            cmd += ["-nic", "none"]
        cmd += self.extra_args
        self.qemu_log = open(self.workdir / f"qemu-{self.boots}.log", "w")
        self.proc = subprocess.Popen(cmd, stdout=self.qemu_log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_path(self.qmp_path)
        self._qmp_connect()
        if nic and not link:
            self.qmp("set_link", name="nic0", up=False)
        self.started_at = time.monotonic()
        self.qmp("cont")
        self._connect_agent()

    def _wait_path(self, path: Path, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        while not path.exists():
            if self.proc.poll() is not None:
                raise GuestError(f"QEMU exited: {(self.workdir / f'qemu-{self.boots}.log').read_text()[-2000:]}")
            if time.monotonic() > end:
                raise GuestError(f"QEMU made no {path.name}")
            time.sleep(0.05)

    def _unix_connect(self, path: Path, timeout: float = 30) -> socket.socket:
        """Connect to one of QEMU's sockets.  Its file appears at bind(),
        a moment before QEMU listens on it: on a busy host a connect in that
        moment is refused, so it is tried again until QEMU listens."""
        end = time.monotonic() + timeout
        while True:
            sock = socket.socket(socket.AF_UNIX)
            try:
                sock.connect(str(path))
                return sock
            except ConnectionRefusedError:
                sock.close()
                if self.proc.poll() is not None or time.monotonic() > end:
                    raise
                time.sleep(0.05)

    def _qmp_connect(self) -> None:
        self._qmp = self._unix_connect(self.qmp_path)
        self._qmp_file = self._qmp.makefile("rw")
        self._qmp_file.readline()           # the greeting
        self.qmp("qmp_capabilities")

    def qmp(self, command: str, **arguments) -> dict:
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self._qmp_file.write(json.dumps(msg) + "\n")
        self._qmp_file.flush()
        while True:
            reply = json.loads(self._qmp_file.readline())
            if "return" in reply or "error" in reply:
                if "error" in reply:
                    raise GuestError(f"QMP {command}: {reply['error']}")
                return reply["return"]

    def set_link(self, up: bool) -> None:
        """Plug the network cable in (True) or pull it out (False)."""
        self.qmp("set_link", name="nic0", up=up)

    def _connect_agent(self) -> None:
        self._sock = self._unix_connect(self.agent_path)
        self._answers, self.hello = {}, None
        self._reader = threading.Thread(target=self._read, args=(self._sock,), daemon=True)
        self._reader.start()

    def _read(self, sock: socket.socket) -> None:
        buf = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    if sock is self._sock:
                        self._sock = None
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    answer = json.loads(line)
                except ValueError:
                    continue        # a half line from before a reboot of the agent
                with self._cond:
                    if answer.get("event") == "hello":
                        self.hello = answer
                    else:
                        self._answers[answer.get("id")] = answer
                    self._cond.notify_all()

    def wait_agent(self, timeout: float = 300) -> float:
        """Wait for the guest's command runner; its uptime at that moment."""
        end = time.monotonic() + timeout
        with self._cond:
            while self.hello is None:
                if self.proc.poll() is not None:
                    raise GuestError(f"QEMU exited during boot (see {self.console})")
                panic = self.panic()
                if panic:
                    raise BootPanic(f"the guest's kernel panicked during boot: {panic} (see {self.console})")
                left = end - time.monotonic()
                if left <= 0:
                    raise GuestError(f"the guest's agent did not answer in {timeout:.0f} s (see {self.console}; "
                                     f"{self._stuck()})")
                self._cond.wait(min(left, 1.0))
        return float(self.hello["uptime"])

    def _stuck(self) -> str:
        """What a boot that never answered was doing: QEMU's run state and CPU
        time, and whether the card had a client and any request of it (a
        silent console alone does not say which side hung)."""
        said = []
        try:
            self._qmp.settimeout(10)        # a monitor that does not answer must not hang the run
            said.append(f"QEMU {self.qmp('query-status').get('status')}")
        except Exception as exc:            # a hung or gone QEMU: say so, and go on
            said.append(f"QEMU's monitor: {type(exc).__name__}")
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            said.append(f"{(int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK'):.0f} s of CPU")
        except (OSError, ValueError, IndexError):
            pass
        if self.lossy is not None:
            said.append(f"card client {'connected' if self.lossy.conn is not None else 'none'}, "
                        f"card {self.lossy.stats}")
        return ", ".join(said)

    def panic(self) -> str | None:
        """The console's "Kernel panic" line of this boot, if any."""
        try:
            text = self.console.read_text(errors="replace")
        except OSError:
            return None
        for line in text.splitlines():
            if "Kernel panic" in line:
                return line.strip()[:300]
        return None

    def request(self, req: dict, timeout: float = 600) -> Result:
        with self._cond:
            if self._sock is None:
                raise GuestError("no connection to the guest's agent")
            self._next_id += 1
            rid = req["id"] = self._next_id
            self._sock.sendall((json.dumps(req) + "\n").encode())
            end = time.monotonic() + timeout + 30
            while rid not in self._answers:
                if self._sock is None:
                    raise GuestError("the guest went away during a command")
                left = end - time.monotonic()
                if left <= 0:
                    raise GuestError(f"no answer from the guest to {str(req)[:200]}")
                self._cond.wait(min(left, 1.0))
            return Result(self._answers.pop(rid))

    def run(self, argv: list[str], *, timeout: float = 600, input: str = "", env: dict | None = None) -> Result:
        """Run ``argv`` as root in the guest."""
        return self.request({"argv": list(argv), "timeout": timeout, "input": input, "env": env or {}}, timeout)

    def sh(self, script: str, *, timeout: float = 600, input: str = "", env: dict | None = None) -> Result:
        """Run a shell script (``/bin/sh -c``) as root in the guest."""
        return self.request({"sh": script, "timeout": timeout, "input": input, "env": env or {}}, timeout)

    def must(self, script: str, **kw) -> str:
        res = self.sh(script, **kw)
        if not res.ok:
            raise GuestError(f"in the guest: {script[:200]!r} -> {res}")
        return res.stdout

    def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        res = self.request({"put": path, "data_b64": base64.b64encode(data).decode(), "mode": mode})
        if not res.ok:
            raise GuestError(f"put {path}: {res.error}")

    def get(self, path: str) -> bytes:
        res = self.request({"get": path})
        if not res.ok:
            raise GuestError(f"get {path}: {res.error}")
        return res.data

    def uptime(self) -> float:
        return float(self.must("cut -d' ' -f1 /proc/uptime").strip())

    @property
    def running(self) -> bool:
        """QEMU is up (booted, not yet powered off or cut)."""
        return bool(self.proc and self.proc.poll() is None)

    def cut(self, aim: str | None = None) -> dict:
        """The power cut: SIGKILL to QEMU, then the card loses its power:
        what the guest had not flushed is lost (or partly kept, some torn).
        ``aim``: the card chose the moment (lossy_disk.arm), recorded with
        the cut.  What the cut did to the card (empty if QEMU was not running)."""
        cut: dict = {}
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            if self.lossy is not None:
                reorder = self._disk_rng.random() < 0.5
                cut = dict(self.lossy.power_cut(reorder=reorder, rng=self._disk_rng),
                           mode="reorder" if reorder else "drop", aim=aim or "blind")
                self.cuts.append(cut)
        self._close()
        return cut

    def disk_summary(self) -> dict:
        """The disk model and what its cuts did, for the run's summary."""
        if self.disk_model != "sd-card":
            return {"model": "writeback"}
        cuts = self.cuts
        return {"model": "sd-card", "seed": self.disk_seed, "cuts": len(cuts),
                "reorder_cuts": sum(c["mode"] == "reorder" for c in cuts),
                "aimed_cuts": sum(c["aim"] != "blind" for c in cuts),
                "cuts_with_unflushed": sum(c["unflushed_writes"] > 0 for c in cuts),
                "unflushed_writes": sum(c["unflushed_writes"] for c in cuts),
                "lost_writes": sum(c["lost_writes"] for c in cuts),
                "kept_writes": sum(c["kept_writes"] for c in cuts),
                "torn_writes": sum(c["torn_writes"] for c in cuts),
                "lost_bytes": sum(c["lost_bytes"] for c in cuts),
                "flushes": self.lossy.stats["flushes"] if self.lossy else 0,
                "poweroffs_cut": self.poweroffs_cut}

    def close_disk(self) -> None:
        """After the last boot: stop serving the card."""
        if self.lossy is not None:
            self.lossy.close()
            self.lossy = None

    def poweroff(self, timeout: float = 180) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                self.sh("systemctl poweroff --no-block", timeout=30)
            except GuestError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                # A power-off that never ends is a cut: the card loses what it
                # holds, as it would when the plug is pulled at last.
                say("vm: the guest did not power off: cutting")
                self.poweroffs_cut += 1
                self.cut()
        self._close()

    def _close(self) -> None:
        for s in (self._sock, getattr(self, "_qmp", None)):
            try:
                if s:
                    s.close()
            except OSError:
                pass
        self._sock = None
        if getattr(self, "qemu_log", None):
            self.qemu_log.close()

    # -- the box's web side, through the forwarded port ------------------------------------------
    def http(self, method: str, path: str, body=None, headers: dict | None = None,
             timeout: float = 10) -> tuple[int, bytes]:
        return http_request(self.port, method, path, body, headers, timeout)

    def wait_http(self, path: str = "/api/state", timeout: float = 300) -> float:
        """Wait until the box answers 200 through the forwarded port; the
        seconds since QEMU was started."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise GuestError("QEMU exited")
            try:
                status, _ = self.http("GET", path, timeout=5)
                if status == 200:
                    return time.monotonic() - self.started_at
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.25)
        raise GuestError(f"the box did not answer {path} through port {self.port} in {timeout:.0f} s")
