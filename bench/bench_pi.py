"""Pi-class figures: the companion at a Raspberry Pi's pace, measured from outside.

    .venv/bin/python -m bench --pi
    .venv/bin/python -m bench.bench_pi [--quick] [--speeds full,1/4,1/8] [--json]

Each process under test runs in a CPU cgroup (:mod:`bench.cpulimit`) limited
to 1/8 of one core (≈ a Pi Zero 2 W's single-thread Python) and to 1/4
(≈ a Pi 4), pinned to one CPU; the load generators (the 50 phones, the
clocks) stay in this process, outside the group, on another CPU, at full
speed.  Every figure is also measured unthrottled ("full", same pinning) in
the same invocation: that run is the baseline each figure sits beside.

Figures, each a real child process:

* **start** — ``companion run --mock``: from spawn to the box's first frame
  (its log line ``box: first frame drawn``), to ``companion: serving`` on
  stdout, to the first answered ``GET /api/state``, and to the buttons being
  live (``box: pins claimed``: the panel says "Starting…" until then);
* **phones_50** — that server with 50 phones on ``/api/events``: from just
  before an action's POST to the event at each phone (``bench_push``'s
  clients), p99 and median, one change every 0.1 s; and back to back (the
  next change as soon as every phone has the last: at 1/8 of a core that
  saturates the CPU, so it measures a queue);
* **press** — a child running the box (mock pins, ``hardware.display``'
  SSD1306 driver — luma.oled's class with our page diff — on a do-nothing
  I²C bus object that counts the bytes): from the pin edge to ``display()``
  returning, plus the time those bytes take on a 400 kHz bus (9 clocks a
  byte, address and control byte and start/stop included).  The same frames
  are then sent through luma.oled's own ``ssd1306`` class on the same kind
  of bus, for the driver cost before our change;
* **press_during_hint** — the box on a FIGHT? grid, pressed again and again
  while a cold hint search runs, in the hint process (what the box does)
  and, for comparison, on a thread of the box's own process: the GIL makes
  the thread variant lag the presses;
* **solve_fight** — ``companion solve fight``, wall clock.

Targets (at 1/8 of a core): press to panel < 30 ms p99, 50 phones < 50 ms
p99, start to serving < 1.5 s, the box's first frame sooner.  The cgroup's
10 ms period adds up to ~9 ms of jitter to any wall-clock figure.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import cpulimit

SPEEDS = {"full": None, "1/4": 0.25, "1/8": 0.125}
I2C_HZ = 400_000
PACE_S = 0.1            # between two changes in the phones figure (a table makes a few a minute)
TARGETS = {"start_to_first_frame_s": 1.5, "start_to_serving_s": 1.5, "phones_50_p99_ms": 50.0,
           "press_to_panel_p99_ms": 30.0}
PIN = "0000"
ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COMPANION_PIN": PIN, "COMPANION_LANG": "en"}
    env.pop("NOTIFY_SOCKET", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)    # an installed companion has its bytecode
    return env


def compile_bytecode(root: Path = ROOT) -> None:
    """Write the project's .pyc files first, as ``pip install`` does on the Pi:
    otherwise every start would compile the sources again (~50 ms here)."""
    import compileall

    for package in ("companion", "appliance", "hardware", "web", "bench"):
        if (root / package).is_dir():
            compileall.compile_dir(str(root / package), quiet=1)


#: The start's baseline: the code before the panel was made to speak first
#: (its first frame then waited for a network library that the look-alike
#: names' loader imported).  ``COMPANION_BENCH_START_BASELINE`` names another
#: revision; an empty value skips the baseline.
START_BASELINE = "aac4d22"


def baseline_tree(rev: str, into: Path) -> Path | None:
    """The repository's files at ``rev`` (``git archive``), compiled, or None
    where git or the revision is missing (a copy without its history)."""
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, timeout=120,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    compile_bytecode(into)
    return into


def _p99(values):
    ordered = sorted(values)
    return ordered[max(0, -(-99 * len(ordered) // 100) - 1)]


# -- start ---------------------------------------------------------------------------

class _Lines:
    """Timestamps the first line of a child's pipe that contains each marker."""

    def __init__(self, pipe, markers):
        self.seen: dict[str, tuple[float, str]] = {}
        self.markers = markers
        self.event = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe):
        for line in pipe:
            now = time.perf_counter()
            for marker in self.markers:
                if marker in line and marker not in self.seen:
                    self.seen[marker] = (now, line)
                    self.event.set()
        self.event.set()

    def wait(self, marker, timeout=60.0):
        deadline = time.monotonic() + timeout
        while marker not in self.seen:
            self.event.clear()
            if marker in self.seen or not self.thread.is_alive() or time.monotonic() > deadline:
                break
            self.event.wait(0.5)
        if marker not in self.seen:
            raise RuntimeError(f"the child never printed {marker!r}")
        return self.seen[marker]


def _spawn_companion(limit: cpulimit.CpuLimit, data: Path, root: Path = ROOT):
    # The command line is appliance/cli.py; a baseline older than that package had it in companion/.
    cli = "appliance.cli" if (root / "appliance" / "cli.py").exists() else "companion.cli"
    cmd = [sys.executable, "-m", cli, "run", "--mock", "--host", "127.0.0.1", "--port", "0",
           "--data", str(data)]
    env = _env()
    if root != ROOT:    # another revision's files come first on the path (``-m`` puts the cwd first)
        env["PYTHONPATH"] = str(root)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=root, preexec_fn=limit.enter)
    out = _Lines(proc.stdout, ["companion: serving"])
    err = _Lines(proc.stderr, ["box: first frame drawn", "box: pins claimed"])
    return proc, started, out, err


def _stop(proc) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _port(line: str) -> int:
    return int(line.split("http://127.0.0.1:")[1].split("/")[0])


def _cpu_s(pid: int) -> float:
    """CPU time the process has run so far (all its threads), from the scheduler."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            pass        # a thread that just ended
    return total / 1e9


def start(limit, repeat: int, root: Path = ROOT, suffix: str = "") -> dict:
    """The wall-clock figures, and the CPU time spent until serving (which
    does not depend on how busy the machine is: wall ≈ CPU / fraction).
    ``root``: another revision's files (the baseline), its figures named
    with ``suffix``."""
    frame, serving, state, cpu, buttons = [], [], [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-pi-") as tmp:
            proc, t0, out, err = _spawn_companion(limit, Path(tmp), root)
            try:
                at, line = out.wait("companion: serving")
                cpu.append(_cpu_s(proc.pid))
                serving.append(at - t0)
                frame.append(err.wait("box: first frame drawn")[0] - t0)
                conn = http.client.HTTPConnection("127.0.0.1", _port(line), timeout=30)
                conn.request("GET", "/api/state")
                conn.getresponse().read()
                state.append(time.perf_counter() - t0)
                conn.close()
                buttons.append(err.wait("box: pins claimed")[0] - t0)
            finally:
                _stop(proc)
    return {"start_to_first_frame_s" + suffix: round(statistics.median(frame), 3),
            "start_to_serving_s" + suffix: round(statistics.median(serving), 3),
            "start_to_first_state_s" + suffix: round(statistics.median(state), 3),
            "start_to_buttons_live_s" + suffix: round(statistics.median(buttons), 3),
            "start_cpu_to_serving_s" + suffix: round(statistics.median(cpu), 3)}


def start_with_baseline(limit, repeat: int, baseline: Path | None) -> dict:
    """The start, and the baseline revision's start interleaved with it (one
    of each in turn, so that a neighbour's load falls on both alike)."""
    figures: dict[str, list] = {}
    for _ in range(repeat):
        runs = [start(limit, 1)] + ([start(limit, 1, baseline, "_baseline")] if baseline else [])
        for one in runs:
            for key, value in one.items():
                figures.setdefault(key, []).append(value)
    return {key: round(statistics.median(values), 3) for key, values in figures.items()}


# -- 50 phones -----------------------------------------------------------------------------

def _paced(port: int, clients: int, pushes: int, gap_s: float) -> dict:
    """bench_push's measure, one change every ``gap_s`` (the server at rest
    between changes, as at a table): the latency of a change, not of a queue."""
    from . import bench_push

    readers = bench_push.Readers(port, "/api/events", clients)
    latencies = []
    try:
        base = readers.first_id()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for k in range(1, pushes + 1):
            (path, body), headers = bench_push._add(k)
            started = time.perf_counter()
            conn.request("POST", path, body=body, headers=headers)
            if conn.getresponse().read() is None:
                raise RuntimeError("no answer")
            latencies.extend(t - started for t in readers.wait_for(base + k).values())
            time.sleep(gap_s)
        conn.close()
    finally:
        readers.close()
    return {"p99_ms": round(_p99(latencies) * 1000, 3), "median_ms": round(statistics.median(latencies) * 1000, 3)}


def phones(limit, clients: int, pushes: int) -> dict:
    """A change seen by ``clients`` phones: one change every 0.1 s (the
    figure with a target), and back to back (bench_push's way: the next
    change as soon as every phone has the last, which at 1/8 of a core
    keeps the CPU saturated: a queue, not a table)."""
    from . import bench_push

    with tempfile.TemporaryDirectory(prefix="bench-pi-") as tmp:
        data = Path(tmp)
        (data / "companion.toml").write_text(f"max_streams = {clients + 4}\n")
        proc, _t0, out, _err = _spawn_companion(limit, data)
        try:
            port = _port(out.wait("companion: serving")[1])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/api/actions", headers={"Content-Type": "application/json", "X-Table-Pin": PIN},
                         body=json.dumps({"type": "new_game", "game": "scoreboard",
                                          "players": ["Ann", "Ben", "Chloé", "Dan"]}))
            if conn.getresponse().status != 200:
                raise RuntimeError("the companion refused new_game")
            conn.close()
            paced = _paced(port, clients, pushes, PACE_S)
            queued = bench_push._measure(proc, port, "/api/events", bench_push._add, clients, pushes)
        finally:
            _stop(proc)
    return {f"phones_{clients}_p99_ms": paced["p99_ms"], f"phones_{clients}_median_ms": paced["median_ms"],
            f"phones_{clients}_back_to_back_p99_ms": queued["p99_ms"],
            f"phones_{clients}_back_to_back_median_ms": queued["median_ms"]}


# -- a press to the panel (runs in the throttled child) ------------------------------------------

class CountingBus:
    """An I²C bus that does nothing but count: what luma's ``i2c(bus=...)``
    calls (``write_i2c_block_data(address, control, bytes)``, ≤ 32 bytes)."""

    def __init__(self):
        self.bytes = 0
        self.clocks = 0

    def write_i2c_block_data(self, address, control, data):
        n = len(data)
        self.bytes += n
        self.clocks += 9 * (n + 2) + 2      # address + control + data, each with its ACK; start, stop


def press_child(presses: int) -> dict:
    """The box with the real driver stack on a counting bus; returns the samples."""
    from gpiozero.pins.mock import MockFactory
    from luma.core.interface.serial import i2c
    from luma.oled.device import ssd1306 as luma_ssd1306

    from companion.session import TableSession
    from companion.store import Store
    from hardware import Box
    from hardware.display import make_device
    from hardware.testing import box_config

    handed = threading.Event()
    bus = CountingBus()
    frames, driver, wire, done_at = [], [], [], [0.0]

    ssd1306 = type(make_device("ssd1306", i2c(bus=CountingBus(), address=0x3C)))

    class Timed(ssd1306):
        def display(self, image):
            before, t0 = bus.clocks, time.perf_counter()
            super().display(image)
            done_at[0] = time.perf_counter()
            driver.append(done_at[0] - t0)
            wire.append((bus.clocks - before) / I2C_HZ)
            frames.append(image.copy())
            handed.set()

    with tempfile.TemporaryDirectory() as data:
        store = Store(data)
        session = TableSession(store)
        session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé", "Dan"]})
        factory = MockFactory()
        config = box_config(bounce_ms=2)
        box = Box(session, config, mock=True, pin_factory=factory,
                  display_factory=lambda: Timed(i2c(bus=bus, address=0x3C), width=128, height=64))
        samples, drawn, sent = [], [], []
        try:
            box.start()
            pins = {name: factory.pin(config["buttons"][name]) for name in ("up", "down")}
            for i in range(presses):
                pin = pins["down" if i % 2 == 0 else "up"]
                handed.clear()
                count = len(driver)
                t0 = time.perf_counter()
                pin.drive_low()
                if not handed.wait(10):
                    raise RuntimeError("no frame reached the panel")
                samples.append(done_at[0] - t0 + wire[-1])
                drawn.append(done_at[0] - t0 - driver[-1])
                sent.append(wire[count])
                pin.drive_high()
                box.flush()
                time.sleep(config["bounce_ms"] / 1000 + 0.0005)
        finally:
            box.close()
            factory.reset()
            store.close()
    # The same frames through luma.oled's own driver (all 1024 bytes, pixel by pixel).
    luma_bus = CountingBus()
    luma = luma_ssd1306(i2c(bus=luma_bus, address=0x3C), width=128, height=64)
    luma_times, luma_wire = [], []
    for image in frames[-presses:]:
        before, t0 = luma_bus.clocks, time.perf_counter()
        luma.display(image)
        luma_times.append(time.perf_counter() - t0)
        luma_wire.append((luma_bus.clocks - before) / I2C_HZ)
    ms = lambda v: round(v * 1000, 3)           # noqa: E731
    return {"press_to_panel_p99_ms": ms(_p99(samples)), "press_to_panel_median_ms": ms(statistics.median(samples)),
            "press_to_drawn_p99_ms": ms(_p99(drawn)),
            "driver_p99_ms": ms(_p99(driver[-presses:])), "i2c_400k_median_ms": ms(statistics.median(sent)),
            "luma_driver_p99_ms": ms(_p99(luma_times)), "luma_i2c_400k_median_ms": ms(statistics.median(luma_wire))}


def cold_hint(state):
    """The solver from an empty memo (each search of the benchmark costs the same)."""
    from companion import fight_solver

    fight_solver.duel.cache_clear()
    return fight_solver.hint(state)


def hint_child(kind: str, rounds: int) -> dict:
    """Presses on the FIGHT? grid while a cold hint search runs, in the hint
    process (``kind`` "process…") or on a thread of the box's process: from
    the pin edge to the frame handed to the panel (a luma dummy), p99."""
    process = kind.startswith("process")
    from gpiozero.pins.mock import MockFactory
    from luma.core.device import dummy

    from companion.hints import HintWorker
    from companion.session import TableSession
    from companion.store import Store
    from hardware import Box
    from hardware.testing import box_config

    handed, stamp = threading.Event(), [0.0]

    class Timed(dummy):
        def display(self, image):
            stamp[0] = time.perf_counter()
            super().display(image)
            handed.set()

    samples, searches = [], []
    with tempfile.TemporaryDirectory() as data:
        store = Store(data)
        session = TableSession(store)
        session.submit({"type": "new_game", "game": "fight", "players": ["Ann", "Ben"]})
        factory = MockFactory()
        config = box_config(bounce_ms=2)
        box = Box(session, config, mock=True, pin_factory=factory,
                  display_factory=lambda: Timed(width=128, height=64, mode="1"))
        try:
            box.start()
            pins = {name: factory.pin(config["buttons"][name]) for name in ("up", "down")}
            state = session.public()
            for _ in range(rounds):
                worker = HintWorker(process=process, solver="bench.bench_pi:cold_hint")
                worker.hint({"game": "fight", "turn": None, "coins": [], "table": {}})   # the process is up
                if os.environ.get("BENCH_PI_HINT_CGROUP") and worker._child is not None:
                    # As on a Pi's other core: the hint process leaves the box's cgroup for its own.
                    Path(os.environ["BENCH_PI_HINT_CGROUP"], "cgroup.procs").write_text(str(worker._child.pid))
                    os.sched_setaffinity(worker._child.pid, {int(os.environ["BENCH_PI_HINT_CPU"])})
                answered = threading.Event()
                t0 = time.perf_counter()
                worker.ask(state, lambda hint: answered.set())
                i = 0
                while not answered.is_set():
                    pin = pins["down" if i % 2 == 0 else "up"]
                    i += 1
                    handed.clear()
                    edge = time.perf_counter()
                    pin.drive_low()
                    if not handed.wait(10):
                        raise RuntimeError("no frame reached the panel")
                    samples.append(stamp[0] - edge)
                    pin.drive_high()
                    box.flush()
                    time.sleep(config["bounce_ms"] / 1000 + 0.0005)
                searches.append(time.perf_counter() - t0)
                worker.close()
        finally:
            box.close()
            factory.reset()
            store.close()
    return {f"press_during_hint_{kind}_p99_ms": round(_p99(samples) * 1000, 3),
            f"press_during_hint_{kind}_median_ms": round(statistics.median(samples) * 1000, 3),
            f"hint_search_{kind}_s": round(statistics.median(searches), 3)}


def hints_during(limit, rounds: int) -> dict:
    """Three ways: the hint process in the box's own cgroup (sharing its
    fraction of a core: pessimistic), the hint process in a cgroup of its
    own with the same fraction on the other CPU (a Pi Zero 2 W has four
    cores: the hint runs beside the box), and the search on a thread."""
    figures = {}
    for mode in ("process", "process_own_core", "thread"):
        env = _env()
        own = cpulimit.CpuLimit("hint", limit.fraction, cpu=cpulimit.cpus()[1]) \
            if mode == "process_own_core" and limit.path is not None else None
        if mode == "process_own_core" and own is None:
            continue                                    # unthrottled: the same as "process"
        if own is not None:
            env["BENCH_PI_HINT_CGROUP"] = str(own.path)
            env["BENCH_PI_HINT_CPU"] = str(own.cpu)
        try:
            proc = subprocess.run([sys.executable, "-m", "bench.bench_pi", "--hint-child", mode, str(rounds)],
                                  capture_output=True, text=True, env=env, cwd=ROOT, preexec_fn=limit.enter,
                                  timeout=900)
        finally:
            if own is not None:
                own.__exit__()
        if proc.returncode != 0:
            raise RuntimeError(f"the hint child failed: {proc.stderr.strip()[-500:]}")
        figures.update(json.loads(proc.stdout))
    return figures


def press(limit, presses: int) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bench.bench_pi", "--press-child", str(presses)],
                          capture_output=True, text=True, env=_env(), cwd=ROOT, preexec_fn=limit.enter, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"the press child failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


# -- solve fight --------------------------------------------------------------------------------------

def solve_fight(limit, repeat: int) -> dict:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "appliance.cli", "solve", "fight"], capture_output=True,
                              env=_env(), cwd=ROOT, preexec_fn=limit.enter, timeout=600)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise RuntimeError(f"solve fight failed: {proc.stderr.decode()[-300:]}")
    return {"solve_fight_s": round(statistics.median(times), 3)}


# -- all of it ------------------------------------------------------------------------------------------

def measure(fraction, name: str, quick: bool, baseline: Path | None = None) -> dict:
    repeat, pushes, presses, rounds = (1, 20, 60, 1) if quick else (3, 100, 300, 3)
    figures: dict = {}
    with cpulimit.CpuLimit(name.replace("/", "-"), fraction) as limit:
        for part in (lambda: start_with_baseline(limit, repeat, baseline), lambda: phones(limit, 50, pushes),
                     lambda: press(limit, presses), lambda: hints_during(limit, rounds),
                     lambda: solve_fight(limit, repeat)):
            try:
                figures.update(part())
            except Exception as exc:        # one broken figure must not hide the others
                figures.setdefault("errors", []).append(f"{type(exc).__name__}: {exc}")
    return figures


def run(quick: bool = False, speeds=tuple(SPEEDS)) -> dict:
    """Every figure at every speed; ``{figure: {speed: value, ..., "target_1/8": t, "met": bool}}``."""
    why_not = cpulimit.available()
    compile_bytecode()
    before = os.sched_getaffinity(0)
    cpulimit.pin_generators()
    by_speed: dict[str, dict] = {}
    rev = os.environ.get("COMPANION_BENCH_START_BASELINE", START_BASELINE)
    with tempfile.TemporaryDirectory(prefix="bench-pi-baseline-") as tmp:
        baseline = baseline_tree(rev, Path(tmp)) if rev else None
        try:
            for name in speeds:
                if SPEEDS[name] is not None and why_not:
                    by_speed[name] = {"skipped": why_not}
                    continue
                by_speed[name] = measure(SPEEDS[name], name, quick, baseline)
        finally:
            os.sched_setaffinity(0, before)
    report: dict = {"what": "the companion throttled by a CPU cgroup (1/4, 1/8 of one core) beside the same "
                            "figures unthrottled; load generators outside the cgroup; *_baseline: the start "
                            f"of revision {rev or '(none)'} in the same run",
                    "cpu_under_test": cpulimit.cpus()[0], "cpu_generators": cpulimit.cpus()[1]}
    figures = []
    for values in by_speed.values():
        figures += [k for k in values if k not in figures and k not in ("errors", "skipped")]
    for figure in figures:
        row = {name: values.get(figure, values.get("skipped", "-")) for name, values in by_speed.items()}
        if figure in TARGETS and isinstance(row.get("1/8"), (int, float)):
            row["target_1/8"] = TARGETS[figure]
            row["met"] = row["1/8"] < TARGETS[figure]
        report[figure] = row
    for name, values in by_speed.items():
        if values.get("errors"):
            report[f"errors_{name}"] = "; ".join(values["errors"])
    return report


def table(report: dict) -> str:
    lines = [report["what"]]
    for figure, row in report.items():
        if isinstance(row, dict):
            cells = "  ".join(f"{k}={v}" for k, v in row.items())
            lines.append(f"  {figure:<28} {cells}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Pi-class figures (throttled by a CPU cgroup)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--speeds", default=",".join(SPEEDS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--press-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--hint-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.press_child:
        print(json.dumps(press_child(args.press_child)))
        return 0
    if args.hint_child:
        print(json.dumps(hint_child(args.hint_child[0], int(args.hint_child[1]))))
        return 0
    report = run(args.quick, tuple(args.speeds.split(",")))
    print(json.dumps(report, indent=1) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
