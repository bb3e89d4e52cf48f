"""Executors: where the batches of a run are worked on (docs/design.md, "Scale"). ``serial`` in this
process, ``process`` on a local process pool, ``dask`` on a Dask distributed cluster. Each runs the
plan's worker function (`harness.run.plan.RunPlan.work`: a simulated replay, `harness.run.worker`, or an
accounting replay, `harness.run.accounting`) on every task and yields one `BatchResult` per batch in
completion order; the run directory puts them back in plan order. This module schedules only: what a
worker does is the worker function's.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from harness.core.files import release_inherited_locks
from harness.run.directory import RunError
from harness.run.parts import BatchResult

__all__ = ["EXECUTORS", "Work", "check_executor", "check_scheduler"]

#: A worker function: one batch's task in, its rows out. Module level, so that it pickles by reference.
Work = Callable[[Any], BatchResult]
_NO_TASK = object()

#: Batches in flight per worker on the process pool. Two keeps every worker busy while the parent
#: writes a finished batch (one running, one queued); more would only add work that an interrupt
#: loses (J).
IN_FLIGHT_PER_WORKER = 2


def _start_worker(parent: int | None = None) -> None:
    """A forked worker's set-up: its parent's directory locks released, SIGTERM back to its default, and
    the worker bound to its parent's life. The parent's handler turns SIGTERM into an exception for its
    own clean-up; in a worker the pool stops at shutdown it would print a traceback from the worker's
    exit instead of ending it.

    A parent killed outright (SIGKILL, the OOM killer) runs no clean-up, and its workers would replay on
    as orphans. On Linux the kernel ends them: ``PR_SET_PDEATHSIG`` sends the worker SIGKILL when its
    parent dies, and since a parent that died before that call sends nothing, the worker then checks
    that its parent is still ``parent`` (the pool's process, which passed its pid; None: whichever process
    started the worker). Elsewhere a daemon thread polls the parent's pid and ends the worker when it
    changes."""
    release_inherited_locks()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid() if parent is None else parent
    if not _die_with_parent():
        threading.Thread(target=_watch_parent, args=(parent,), name="ctxbench-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the kernel was asked to tell
        os._exit(1)


#: ``prctl`` option: the signal the calling process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1
#: Seconds between two looks at the parent's pid where the kernel cannot be asked (not Linux).
PARENT_POLL_S = 1.0


def _die_with_parent() -> bool:
    """Ask the kernel for SIGKILL when the parent dies; False where it cannot be asked (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):  # no libc to load, no prctl in it
        return False


def _watch_parent(parent: int) -> None:
    """End the worker as soon as its parent is no longer ``parent`` (it died: the worker was re-parented)."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _serial(work: Work, tasks: Iterable[Any], jobs: int, scheduler: str | None) -> Iterator[BatchResult]:
    for task in tasks:
        yield work(task)


def _process(work: Work, tasks: Iterable[Any], jobs: int, scheduler: str | None) -> Iterator[BatchResult]:
    workers = jobs or os.cpu_count() or 1
    # A forked worker must not keep the run directory's lock alive if the parent is killed.
    context = multiprocessing.get_context()
    # fork and spawn start each worker from this process; a fork server starts them from itself (and ends
    # when this process does), so there the worker's parent at start-up is the one to outlive.
    parent = os.getpid() if context.get_start_method() in ("fork", "spawn") else None
    with ProcessPoolExecutor(max_workers=workers, initializer=_start_worker, initargs=(parent,),
                             mp_context=context) as pool:
        pending: set[Future[BatchResult]] = set()
        # Tasks are made as they are submitted, never all at once: a batch of recorded sessions carries its
        # sessions pickled, and a run's worth of them would sit in the parent's memory.
        queue = iter(tasks)
        more = True
        while more or pending:
            while more and len(pending) < IN_FLIGHT_PER_WORKER * workers:
                task = next(queue, _NO_TASK)
                if task is _NO_TASK:
                    more = False
                else:
                    pending.add(pool.submit(work, task))
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()


def check_executor(name: str) -> None:
    """RunError, before anything is written, when executor ``name`` needs an extra that is not installed."""
    if name == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise RunError("executor dask needs the optional extra: pip install 'ctxbench[dask]'") from None


def _dask(work: Work, tasks: Iterable[Any], jobs: int, scheduler: str | None) -> Iterator[BatchResult]:
    check_executor("dask")
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=jobs or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        futures = client.map(work, list(tasks), pure=False)
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def check_scheduler(address: str) -> None:
    """Connect to a Dask scheduler once, before anything is written; RunError when it cannot."""
    check_executor("dask")
    from distributed import Client

    try:
        Client(address, timeout="10s").close()
    except (OSError, ValueError, TimeoutError) as e:
        raise RunError(f"--scheduler: cannot connect to {address}: {e}") from None


#: An executor: (worker function, tasks, jobs, scheduler address) -> results as batches finish.
EXECUTORS: dict[str, Callable[[Work, Iterable[Any], int, str | None], Iterator[BatchResult]]] = {
    "serial": _serial, "process": _process, "dask": _dask,
}
