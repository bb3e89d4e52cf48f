"""Executors: where the batches of a run are replayed (docs/design.md, "Scale"). ``serial`` in this
process, ``process`` on a local process pool, ``dask`` on a Dask distributed cluster. Each yields one
`BatchResult` per batch in completion order; the store puts them back in plan order.

A worker builds and tokenizes each session's script once and replays it under every variant,
returning plain rows; it never writes to the run directory.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, NamedTuple

import scenarios
import strategies
from harness.core import tables
from harness.core.crn import session_seed
from harness.core.files import release_inherited_locks
from harness.core.switches import Switches
from harness.run.parts import EventLines
from harness.run.plan import BatchTask, VariantSpec
from harness.run.store import SESSION_COLUMNS, RunError
from harness.sim.kernel import replay
from harness.sim.memory import MemoryStore
from harness.sim.metrics import MEMORY_OFF_ROW
from harness.sim.profiles import Profile
from scenarios.base import Series
from scenarios.draws import derive_seed

__all__ = ["EXECUTORS", "BatchResult", "check_executor", "check_scheduler", "replay_batch", "run_batch"]


class BatchResult(NamedTuple):
    """The rows of one replayed batch, plain data for the parent to write as its part."""

    batch_id: str
    session_rows: list[dict[str, Any]]
    call_rows: list[dict[str, Any]]
    #: The per-turn event log's rows, encoded here in the worker (none when the run keeps no event log).
    events: EventLines

#: Batches in flight per worker on the process pool. Two keeps every worker busy while the parent
#: writes a finished batch (one running, one queued); more would only add work that an interrupt
#: loses (J).
IN_FLIGHT_PER_WORKER = 2


def run_batch(task: BatchTask) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """Replay every session of a batch under every variant: (batch id, session rows, call rows), the
    two tables of `replay_batch` (whose event log it does not ask for)."""
    result = replay_batch(task, events=False)
    return result.batch_id, result.session_rows, result.call_rows


def replay_batch(task: BatchTask, *, events: bool | None = None) -> BatchResult:
    """Replay every session of a batch under every variant; the event log as the task says unless
    ``events`` says otherwise."""
    keep_events = task.events if events is None else events
    profiles = [Profile(**p) for p in task.profiles]
    session_rows: list[dict[str, Any]] = []
    call_rows: list[dict[str, Any]] = []
    event_rows: list[list[Any]] = []
    series_plan = task.series
    #: Each variant's memory as the previous session of the current series left it (a batch holds whole
    #: series, in order, so this never needs another batch's sessions).
    memories: dict[str, MemoryStore] = {}
    for planned in task.batch.sessions:
        scenario, params = task.scenarios[planned.scenario_index]
        seed = session_seed(task.root_seed, scenario, planned.session_index)
        series: Series | None = None
        extra: dict[str, Any] = {}
        if series_plan is not None:
            number, position = series_plan.locate(planned.session_index)
            series = Series(series_seed=derive_seed(task.root_seed, scenario, "series", number), position=position,
                            p_change=series_plan.p_change)
            extra = {"series": number, "series_position": position}
            if position == 0:
                memories.clear()
        try:
            script = scenarios.generate(scenario, seed, series=series, **params)
        except Exception as e:  # a generator bug: record it against every variant and go on
            for spec in task.variants:
                session_rows.append(_error_row(scenario, planned.session_index, seed, spec, e) | extra)
            continue
        for spec in task.variants:
            memory = memories.get(spec.label, MemoryStore()) if series_plan is not None and spec.memory else None
            try:
                result = replay(script, strategies.create(spec.name, **spec.params), profiles[spec.profile],
                                switches=Switches(**spec.switches), scenario=scenario,
                                session_index=planned.session_index, strategy_label=spec.label, events=keep_events,
                                memory=memory, p_write=series_plan.p_write if series_plan is not None else 0.0)
            except Exception as e:  # the run goes on; the row says what failed (exit code 1)
                session_rows.append(_error_row(scenario, planned.session_index, seed, spec, e) | extra)
                continue
            if result.memory is not None:
                memories[spec.label] = result.memory
            memory_row = (result.memory_row or MEMORY_OFF_ROW) if series_plan is not None else {}
            session_rows.append(result.record.as_row() | spec.tags | extra | memory_row)
            call_rows.extend(c.as_row() for c in result.calls)
            event_rows.extend(result.event_rows)
    return BatchResult(task.batch.id, session_rows, call_rows, EventLines.of(event_rows))


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


def _error_row(scenario: str, index: int, seed: int, spec: VariantSpec, e: BaseException) -> dict[str, Any]:
    """The row of a session whose replay raised: every column at its default (no counts, no cost), then the
    session's identity, the switches it was to run with, outcome ``error`` and the exception."""
    switches = spec.switches
    row = tables.defaults(tables.select(tables.SESSION_COLUMNS, SESSION_COLUMNS))
    row |= {"scenario": scenario, "session_index": index, "seed": seed, "strategy": spec.label, "outcome": "error",
            "contracts": bool(switches["contracts"]), "errors": switches["errors"],
            "breaker": bool(switches["breaker"]), "output_cap_chars": int(switches["output_cap_chars"]),
            "token_budget": int(switches["token_budget"]),
            "normalize_tool_names": bool(switches.get("normalize_tool_names", False)),
            "family": scenario,
            "error": "".join(traceback.format_exception_only(type(e), e)).strip()} | spec.tags
    return row


def _serial(tasks: Sequence[BatchTask], jobs: int, scheduler: str | None) -> Iterator[BatchResult]:
    for task in tasks:
        yield replay_batch(task)


def _process(tasks: Sequence[BatchTask], jobs: int, scheduler: str | None) -> Iterator[BatchResult]:
    workers = jobs or os.cpu_count() or 1
    # A forked worker must not keep the run directory's lock alive if the parent is killed.
    context = multiprocessing.get_context()
    # fork and spawn start each worker from this process; a fork server starts them from itself (and ends
    # when this process does), so there the worker's parent at start-up is the one to outlive.
    parent = os.getpid() if context.get_start_method() in ("fork", "spawn") else None
    with ProcessPoolExecutor(max_workers=workers, initializer=_start_worker, initargs=(parent,),
                             mp_context=context) as pool:
        pending: set[Future[BatchResult]] = set()
        queue = list(tasks)
        while queue or pending:
            while queue and len(pending) < IN_FLIGHT_PER_WORKER * workers:
                pending.add(pool.submit(replay_batch, queue.pop(0)))
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


def _dask(tasks: Sequence[BatchTask], jobs: int, scheduler: str | None) -> Iterator[BatchResult]:
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
        futures = client.map(replay_batch, list(tasks), pure=False)
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


#: An executor: (tasks, jobs, scheduler address) -> results as batches finish.
EXECUTORS: dict[str, Callable[[Sequence[BatchTask], int, str | None], Iterator[BatchResult]]] = {
    "serial": _serial, "process": _process, "dask": _dask,
}
