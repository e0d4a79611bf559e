r"""Fan-out of independent groups: serially, in local worker processes, or on a Dask cluster.

A group (a seed block x P group of posterior chains, a sweep chunk of one configuration) is a
deterministic function of its inputs and its key, so where it runs changes nothing in its result.
:func:`map_groups` runs ``fn(item)`` for every item

* serially in this process (``jobs=1``, the default);
* in ``jobs`` local worker processes (``concurrent.futures`` with ``spawn``: no forked XLA
  runtime);
* on a Dask distributed cluster (``cluster="tcp://host:port"``: a running scheduler, see
  docs/guide/scaling-out.md), or on a local one started for the call (``cluster="local:N"``: N
  worker processes of one thread each, closed at the end).

Dask distributed is the engine: pure Python, one PyPI wheel, a futures API, and the same code for a
``LocalCluster`` and a remote scheduler (``Client(address)``); lighter than Ray for a CPU lab. It is
imported only when ``cluster`` is given (``pip install "copyhead_jax[cluster]"``).

Failures are data: an item whose ``fn`` raises gets a :class:`GroupFailure` in its slot, the other
items' results are kept; ``map_groups`` itself raises only for bad arguments or a cluster it cannot
reach. Results come back in the input order.

:func:`run_dependent` runs jobs that wait for other jobs (``python -m experiments --jobs``) in
local worker processes, the costliest ready job first.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import re
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .._checks import check_int

__all__ = ["GroupFailure", "map_groups", "failures", "run_dependent"]

#: a scheduler address: ``scheme://host:port`` (tcp, tls, ws, wss, ucx), or an in-process
#: cluster's ``inproc://...``
_ADDRESS = re.compile(r"^((tcp|tls|ws|wss|ucx)://[^\s/:]+:\d+|inproc://\S+)$")
_LOCAL = re.compile(r"^local:(\d+)$")


@dataclass(frozen=True)
class GroupFailure:
    """The record of an item whose function raised: its position, the exception's type and message,
    and the formatted traceback (from the worker that ran it)."""

    index: int
    error: str
    message: str
    traceback: str

    def __str__(self) -> str:
        return f"item {self.index}: {self.error}: {self.message}"


def failures(results: Iterable[Any]) -> list[GroupFailure]:
    """The :class:`GroupFailure` records among ``map_groups``' results."""
    return [r for r in results if isinstance(r, GroupFailure)]


def _failure(i: int, e: BaseException, tb: str | None = None) -> GroupFailure:
    if tb is None:
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return GroupFailure(i, type(e).__name__, str(e), tb)


def _check_cluster(cluster: str | None) -> tuple[str, int] | None:
    """``None``, ``("address", 0)`` or ``("local", N)``; else a one-line ``ValueError``."""
    if cluster is None:
        return None
    if not isinstance(cluster, str):
        raise ValueError(
            f"cluster must be a string 'tcp://host:port' or 'local:N', got {cluster!r}"
        )
    m = _LOCAL.match(cluster)
    if m:
        n = int(m.group(1))
        if n < 1:
            raise ValueError(f"cluster 'local:N' needs N >= 1 worker processes, got {cluster!r}")
        return ("local", n)
    if _ADDRESS.match(cluster):
        return ("address", 0)
    raise ValueError(
        f"cluster must be a scheduler address 'tcp://host:port' or 'local:N', got {cluster!r}"
    )


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise ImportError(
            'map_groups(cluster=...) needs Dask distributed: pip install "copyhead_jax[cluster]"'
        ) from None
    return distributed


def _tick(progress, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _serial(fn, items, progress) -> list:
    out: list = []
    for i, x in enumerate(items):
        try:
            out.append(fn(x))
        except Exception as e:  # noqa: BLE001  (failures are data; Ctrl-C still stops)
            out.append(_failure(i, e))
        _tick(progress, i + 1, len(items))
    return out


def _processes(fn, items, jobs: int, progress) -> list:
    out: list = [None] * len(items)
    ctx = multiprocessing.get_context("spawn")  # a forked XLA runtime can deadlock
    with cf.ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=ctx) as pool:
        futs = {pool.submit(fn, x): i for i, x in enumerate(items)}
        for done, f in enumerate(cf.as_completed(futs), 1):
            i = futs[f]
            e = f.exception()
            out[i] = f.result() if e is None else _failure(i, e)
            _tick(progress, done, len(items))
    return out


def _dask(fn, items, kind: str, arg: str, n: int, progress) -> list:
    distributed = _import_distributed()
    cluster = None
    if kind == "local":
        import dask

        # Dask's nanny caps NumPy's BLAS at one thread in its workers (OMP/MKL/OPENBLAS_NUM_THREADS
        # = 1); a BLAS result (np.linalg.slogdet) can change in its last bits with the thread
        # count, so the local workers keep this process's environment instead
        with dask.config.set({"distributed.nanny.pre-spawn-environ": {}}):
            cluster = distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
            )
        arg = cluster.scheduler_address
    out: list = [None] * len(items)
    try:
        with distributed.Client(arg) as client:
            # pure=False: every item runs (no dedup of equal items by Dask's token)
            futs = client.map(fn, items, pure=False)
            index = {f.key: i for i, f in enumerate(futs)}
            for done, f in enumerate(distributed.as_completed(futs), 1):
                i = index[f.key]
                if f.status == "finished":
                    out[i] = f.result()
                else:  # "error", or "cancelled" (e.g. its workers were lost)
                    try:
                        e = f.exception()
                        tb = "".join(traceback.format_tb(f.traceback()))
                    except Exception as lost:  # noqa: BLE001
                        e, tb = lost, ""
                    out[i] = _failure(i, e, f"{tb}{type(e).__name__}: {e}")
                f.release()
                _tick(progress, done, len(items))
    finally:
        if cluster is not None:
            cluster.close()
    return out


def map_groups(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    cluster: str | None = None,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> list:
    """``[fn(item) for item in items]`` for independent items, in input order, run serially
    (``jobs=1``), in ``jobs`` local spawned processes, or on a Dask cluster (``cluster``: a
    scheduler address ``"tcp://host:port"``, or ``"local:N"`` for a local cluster of N one-thread
    worker processes started and closed by this call). An item whose ``fn`` raises gets a
    :class:`GroupFailure` (``failures(results)`` lists them); the other items run to the end.
    ``fn`` and the items must pickle (a module-level function) for ``jobs > 1`` and ``cluster``;
    ``progress(done, total)`` is called as items finish."""
    jobs = check_int("jobs", jobs, lo=1)
    where = _check_cluster(cluster)
    if where is not None and jobs != 1:
        raise ValueError(
            f"jobs must be 1 when cluster is given (its workers run items), got {jobs}"
        )
    items = list(items)
    if not items:
        return []
    if where is not None:
        return _dask(fn, items, where[0], cluster, where[1], progress)
    if jobs > 1 and len(items) > 1:
        return _processes(fn, items, jobs, progress)
    return _serial(fn, items, progress)


def run_dependent(
    fn: Callable[[Any], Any],
    jobs: Iterable[tuple[Any, Iterable[Any], float]],
    *,
    workers: int,
    on_done: Callable[[Any, Any], None] | None = None,
) -> list[tuple[Any, Any]]:
    """``fn(job)`` for every ``(job, deps, cost)`` of ``jobs`` in ``workers`` spawned processes,
    one job per process; a job starts once every job in its ``deps`` has finished, the ready job
    of the largest cost first, where a job's cost includes the costs of the jobs that wait for
    it (a cheap job that unlocks long ones goes before another long job). ``on_done(job,
    result)`` is called as each job finishes; returns ``[(job, result)]`` in finishing order. A
    job that raises stops the run with its error (unlike :func:`map_groups`). ``fn`` and the
    jobs must pickle; jobs are hashable."""
    workers = check_int("workers", workers, lo=1)
    todo = [(job, list(deps), float(cost)) for job, deps, cost in jobs]
    after = {t[0]: sum(u[2] for u in todo if t[0] in u[1]) for t in todo}
    todo = [(job, deps, cost + after[job]) for job, deps, cost in todo]
    done: set = set()
    running: dict = {}
    out: list = []
    ctx = multiprocessing.get_context("spawn")  # a forked XLA runtime can deadlock
    # one job per process: a process that compiles hundreds of XLA programs runs out of memory
    # maps (LLVM "Cannot allocate memory" with 65,530 maps, twice after ~80 min on a 2-core CPU)
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, max_tasks_per_child=1) as pool:
        while todo or running:
            ready = sorted((t for t in todo if all(d in done for d in t[1])), key=lambda t: -t[2])
            for t in ready[: workers - len(running)]:
                todo.remove(t)
                running[pool.submit(fn, t[0])] = t[0]
            if not running:
                raise ValueError(f"jobs wait for jobs that are not given: {[t[0] for t in todo]}")
            finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                job = running.pop(fut)
                result = fut.result()
                done.add(job)
                out.append((job, result))
                if on_done is not None:
                    on_done(job, result)
    return out
