"""FIGHT? hints computed in a process of their own, with a time budget.

A hint is a search: ~0.2 s here the first time, ~2 s on a Pi Zero 2 W, and
up to ~0.8 s here (several seconds on the Pi) for a 3+ seat "team-up" hint.
Run on the box's thread it froze the screen; run on a web thread it still
froze the box, because of the GIL: while a search holds it, each time the
box's thread blocks (a queue, a lock, the panel) it must wait up to
``sys.getswitchinterval()`` (5 ms) to get it back, and a press took up to
0.43 s.  So the search runs in a separate process (started on first use,
with the lowest CPU priority, so that on a Pi's single slow core the box and
the phones come first), and the callers only wait on a pipe.

* :meth:`HintWorker.ask` — for the box: returns at once; ``done(hint)`` is
  called later from the worker's thread (the box draws "thinking…" meanwhile);
* :meth:`HintWorker.hint` — for the web: blocks the calling thread (only it).

Searches run one at a time; the answers for the last positions asked are
kept, so the box and a table of phones asking for the same position pay
once.  A search that overruns ``budget_s`` is abandoned (the process is
ended and started again at the next ask) and answered with a hint that says
so.  ``process=False`` runs the same searches on a thread instead (for the
benchmark's comparison, and where processes cannot be started).
"""

from __future__ import annotations

import atexit
import importlib
import json
import logging
import os
import queue
import threading
from collections import OrderedDict
from typing import Callable

from .i18n import N_

log = logging.getLogger("companion.hints")

BUDGET_S = 20.0         # wall clock, per search, at a Pi Zero's pace included
KEPT = 16               # answers kept, by position
SOLVER = "companion.fight_solver:hint"
TOO_LONG = N_("no hint: the search took too long")
FAILED = N_("no hint: the search failed")


def position_key(state: dict) -> str:
    """What a hint depends on: the purses, the table and the seat to play."""
    return json.dumps([state.get("coins"), state.get("table"), state.get("turn")], sort_keys=True)


def _solver(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _serve(fd: int, solver_path: str) -> None:
    """The worker process: answer each state sent on ``fd`` with its hint."""
    from multiprocessing.connection import Connection

    try:
        os.nice(19)                 # the box and the phones first...
        if hasattr(os, "SCHED_IDLE"):   # ...and on Linux, only when nothing else wants the CPU
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        pass
    conn = Connection(fd)
    solve = _solver(solver_path)
    while True:
        try:
            state = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer = ("ok", solve(state))
        except Exception as exc:    # a bad state: the caller gets the error, the worker lives on
            answer = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(answer)


class HintWorker:
    def __init__(self, budget_s: float | None = None, *, process: bool = True, solver: str = SOLVER):
        # BUDGET_S read now, not when the class was defined: a test run sets
        # its own ceiling for the workers it does not give a budget to.
        self.budget_s = BUDGET_S if budget_s is None else budget_s
        self.process = process
        self.solver = solver
        self.searches = 0                    # searches started (not answered from the cache)
        self._kept: OrderedDict[str, object] = OrderedDict()
        self._asks: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._child = None
        self._conn = None
        self._pending = 0                    # asks queued or being searched
        self._idle = threading.Condition(self._lock)
        self._closed = False

    @property
    def busy(self) -> bool:
        """An ask is waiting for its answer (queued or being searched)."""
        with self._lock:
            return self._pending > 0

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every ask so far has been answered; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    # -- the callers' side -----------------------------------------------------------
    def ask(self, state: dict, done: Callable[[object], None]) -> None:
        """Compute the hint for ``state`` (a FIGHT? public view) and call
        ``done(hint)`` from the worker's thread — at once if it is known."""
        key = position_key(state)
        with self._lock:
            known = self._kept.get(key)
            if known is None:
                if self._closed:
                    raise RuntimeError("the hint worker is closed")
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="hints", daemon=True)
                    self._thread.start()
                self._pending += 1
                self._asks.put((key, dict(state), done))
        if known is not None:
            done(known)

    def hint(self, state: dict, timeout: float | None = None):
        """The hint for ``state``, waiting for it (this thread only)."""
        answer: list = []
        ready = threading.Event()
        self.ask(state, lambda h: (answer.append(h), ready.set()))
        if not ready.wait(self.budget_s + 5 if timeout is None else timeout):
            return _no_hint(state, TOO_LONG)
        return answer[0]

    def close(self) -> None:
        """Stop the search under way (its caller gets a "failed" hint) and the worker."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._asks.put(None)
        self._stop_child()
        if thread is not None:
            thread.join(5)

    # -- the worker's thread -------------------------------------------------------------
    def _run(self) -> None:
        while True:
            item = self._asks.get()
            if item is None:
                return
            key, state, done = item
            with self._lock:
                hint = self._kept.get(key)         # asked twice before the first answer
            if hint is None:
                self.searches += 1
                try:
                    hint = self._search(state)
                except Exception:
                    log.exception("a hint search failed")
                    hint = _no_hint(state, FAILED)
            try:
                done(hint)
            except Exception:
                log.exception("a hint's receiver failed")
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()

    def _search(self, state: dict):
        if not self.process:
            return self._keep(position_key(state), _solver(self.solver)(state))
        try:
            if self._child is None:
                self._start_child()
            conn = self._conn           # close() may drop it meanwhile: then OSError/EOFError
            conn.send(state)
            if not conn.poll(self.budget_s):
                log.warning("a hint search overran its %s s budget: abandoned", self.budget_s)
                self._stop_child()
                return _no_hint(state, TOO_LONG)
            status, value = conn.recv()
        except (OSError, EOFError, AttributeError) as exc:     # the process died, or close()
            if not self._closed:
                log.error("the hint process failed: %s", exc)
            self._stop_child()
            return _no_hint(state, FAILED)
        if status != "ok":
            raise ValueError(value)
        return self._keep(position_key(state), value)

    def _keep(self, key: str, hint):
        with self._lock:
            self._kept[key] = hint
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return hint

    def _start_child(self) -> None:
        # A fresh interpreter (not fork: the parent has threads, and a forked
        # child could inherit a lock one of them holds; not multiprocessing's
        # spawn either: it imports the parent's main script again).
        import socket
        import subprocess
        import sys
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._child = subprocess.Popen([sys.executable, "-m", "companion.hints", str(theirs.fileno()), self.solver],
                                       pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL)
        theirs.close()
        self._conn = Connection(ours.detach())

    def _stop_child(self) -> None:
        child, conn, self._child, self._conn = self._child, self._conn, None, None
        if child is not None:           # first: a search waiting on the pipe then sees its end
            child.terminate()
            try:
                child.wait(5)
            except Exception:
                child.kill()
        if conn is not None:
            conn.close()


def _no_hint(state: dict, reason: str):
    from .fight_solver import Hint

    return Hint(None, seat=state.get("turn"), reason=reason)


_shared: HintWorker | None = None
_shared_lock = threading.Lock()


def shared() -> HintWorker:
    """The process's hint worker (the box and the web route share its answers)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._closed:
            _shared = HintWorker()
            atexit.register(_shared.close)
        return _shared


if __name__ == "__main__":      # the worker process: python -m companion.hints FD SOLVER
    import sys

    _serve(int(sys.argv[1]), sys.argv[2])
