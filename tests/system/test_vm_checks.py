"""The VM's cut checks (tests/vm/cut_checks.py) alone: a store's log against
what the client was told, as every cut is judged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vm"))
import cut_checks  # noqa: E402


def add(seat: int, points: int) -> str:
    return json.dumps({"type": "add", "seat": seat, "points": points})


KNOWN = [json.dumps({"type": "new_game"})]
A, B, C, D = add(0, 1), add(1, 2), add(2, 3), add(0, 4)


def judged(stored, entries, integrity=("ok",), known=KNOWN):
    return cut_checks.judge(known + stored, list(integrity), known, entries)


def test_every_acknowledged_action_in_order_holds():
    assert judged([A, B, C], [(A, True), (B, True), (C, True)]) == (0, [])
    # The one in flight may be there or not.
    assert judged([A, B], [(A, True), (B, True), (C, False)]) == (0, [])
    assert judged([A, B, C], [(A, True), (B, True), (C, False)]) == (0, [])


def test_a_missing_acknowledged_action_is_lost():
    lost, problems = judged([A, C], [(A, True), (B, True), (C, True)])
    assert lost == 1 and "missing" in problems[0]


def test_an_action_nobody_sent_or_out_of_order_fails():
    assert judged([A, D], [(A, True)])[1]
    lost, problems = judged([B, A], [(A, True), (B, True)])
    assert lost == 1 and problems


def test_unknown_outcomes_in_the_middle_of_an_update_may_be_there_or_not():
    """Actions sent while the box went down (the answer never came) are
    neither required nor strangers, wherever they are in the order."""
    entries = [(A, True), (B, False), (A, True), (C, False), (D, True)]
    for stored in ([A, A, D], [A, B, A, D], [A, A, C, D], [A, B, A, C, D]):
        assert judged(stored, entries) == (0, []), stored
    # Duplicates: the optional A first, the required one after; a greedy
    # matcher would take the first and call the second lost.
    assert judged([A], [(A, False), (A, True)]) == (0, [])
    assert judged([], [(A, False), (A, True)])[0] == 1


def test_a_damaged_store_or_changed_games_fail():
    assert judged([A], [(A, True)], integrity=["row 3 missing from index"])[1]
    lost, problems = cut_checks.judge([A], ["ok"], KNOWN, [(A, True)])
    assert lost >= 1 and "before the cycle" in problems[0]


def test_a_power_off_that_never_ends_is_a_cut_the_card_sees(tmp_path):
    """VM.poweroff()'s fallback: QEMU killed and the card's power cut, so the
    writes it held do not survive into the next boot."""
    import subprocess

    import lossy_disk
    import vmlib

    disk = tmp_path / "disk.raw"
    disk.write_bytes(bytes(1 << 16))
    vm = vmlib.VM("amd64", vmlib.Image(tmp_path), disk, tmp_path / "payload.raw", tmp_path, port=1)
    vm.lossy = lossy_disk.LossyDisk(disk, tmp_path / "root.nbd")
    try:
        vm.lossy.cache.write(0, b"held, never flushed")
        vm.proc = subprocess.Popen(["sleep", "60"])        # a guest that does not power off
        vm.qemu_log = None
        vm.poweroff(timeout=0.2)
        assert vm.proc.poll() is not None
        assert vm.lossy.cache.pending == [] and vm.lossy.cache.pages == {}     # nothing held any more
        assert vm.poweroffs_cut == 1 and len(vm.cuts) == 1 and vm.cuts[0]["unflushed_writes"] == 1
        if vm.cuts[0]["lost_writes"]:           # a reordering cut may have kept it, whole or torn
            assert vm.lossy.cache.read(0, 4) == bytes(4)
    finally:
        vm.close_disk()


# -- the update cuts' trap (tests/vm/update_check.py's TRAP), on a fake layout ------------------------

def _trap(tmp_path, **spec):
    """TRAP in a process of its own, on folders of tmp_path; armed when it returns."""
    import subprocess
    import time

    import update_check

    paths = {k: str(tmp_path / k) for k in ("root", "inbox", "opt", "cgroup")}
    paths["armed"] = str(tmp_path / "armed")
    for unit in ("companion-update.service", "companion.service"):
        (tmp_path / "cgroup" / unit).mkdir(parents=True)
        (tmp_path / "cgroup" / unit / "cgroup.freeze").write_text("0")
    spec = dict({"here": "1.0", "timeout": 30, "freeze": "companion-update.service", "delay": 0}, **spec,
                paths=paths)
    proc = subprocess.Popen([sys.executable, "-c", update_check.TRAP, json.dumps(spec)], stdout=subprocess.PIPE,
                            text=True)
    end = time.monotonic() + 20
    while not (tmp_path / "armed").exists() and time.monotonic() < end:
        time.sleep(0.02)
    return proc, tmp_path


def _write(path, obj):
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(obj))
    tmp.rename(path)            # as the durable write does: inotify sees it moved in


def test_the_trap_freezes_the_worker_at_the_aimed_step_and_says_where(tmp_path):
    import time

    (tmp_path / "root").mkdir()
    _write(tmp_path / "root/status.json", {"state": "done", "request": "old"})
    proc, t = _trap(tmp_path, aim="switch", variant="between the links")
    _write(t / "root/status.json", {"state": "verifying", "request": "new"})
    _write(t / "root/status.json", {"state": "installing", "request": "new"})
    _write(t / "root/pending.json", {"phase": "switching"})
    time.sleep(0.5)
    assert proc.poll() is None                  # switching, but previous not switched yet
    (t / "opt/.previous.new").symlink_to("releases/1.0")
    (t / "opt/.previous.new").rename(t / "opt/previous")
    out = json.loads(proc.communicate(timeout=20)[0])
    assert out == dict(out, reached=True, phase="switch", step="switching", previous="1.0",
                       frozen="companion-update.service")
    assert (t / "cgroup/companion-update.service/cgroup.freeze").read_text() == "1"
    assert (t / "cgroup/companion.service/cgroup.freeze").read_text() == "0"


def test_the_trap_gives_up_once_the_update_went_past_its_step(tmp_path):
    (tmp_path / "root").mkdir()
    _write(tmp_path / "root/status.json", {"state": "done", "request": "old"})
    proc, t = _trap(tmp_path, aim="build", freeze=None)
    _write(t / "root/status.json", {"state": "verifying", "request": "new"})
    _write(t / "root/pending.json", {"phase": "prepared"})         # installing never seen
    out = json.loads(proc.communicate(timeout=20)[0])
    assert out["reached"] is False and out["phase"] == "back-up" and out["frozen"] is None


def test_the_trap_knows_the_upload_and_an_old_status_from_a_new_one(tmp_path):
    (tmp_path / "root").mkdir()
    _write(tmp_path / "root/status.json", {"state": "done", "request": "old"})
    proc, t = _trap(tmp_path, aim="upload", freeze="companion.service")
    (t / "inbox/.incoming.bundle.5f3a9c01d2e4.tmp").write_bytes(b"a bundle, half")   # durable.write's name
    out = json.loads(proc.communicate(timeout=20)[0])
    assert out == dict(out, reached=True, phase="upload", step="receiving", frozen="companion.service")
    proc, t = _trap(tmp_path / "after", aim="after", freeze=None)
    _write(t / "root/status.json", {"state": "failed", "request": "new"})
    assert json.loads(proc.communicate(timeout=20)[0])["phase"] == "after"
