"""One task per item on an executor, results in task order (private; used by sweep and experiments).

``executor`` is what the public functions accept: None or ``"threads"`` (a thread pool made
here), ``"processes"`` (a process pool made here, forkserver where the platform has it, else
spawn: never fork a process that has threads running), any ``concurrent.futures.Executor``
(used as given and left open) or a ``dask.distributed.Client`` (tasks go to its workers).
A pool made here has ``max_workers`` workers (default: every core this process may use), never
more than there are tasks, and is shut down before ``run_tasks`` returns. Nothing from Dask is
imported unless a Client is passed.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, TypeVar

from ._progress import Progress

T = TypeVar("T")
R = TypeVar("R")
#: ``annotate(index, error) -> error``: called on the failure ``run_tasks`` raises.
Annotate = Callable[[int, BaseException], BaseException]


def is_dask_client(executor: Any) -> bool:
    """True for a ``dask.distributed.Client`` (checked without importing Dask)."""
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "map") and hasattr(executor, "gather")


def check_executor(executor: Any) -> None:
    """ValueError unless ``executor`` is one that ``run_tasks`` accepts."""
    import concurrent.futures as cf

    if executor in (None, "threads", "processes") or isinstance(executor, cf.Executor) or is_dask_client(executor):
        return
    raise ValueError(f"executor must be None, 'threads', 'processes', a concurrent.futures.Executor or a "
                     f"dask.distributed.Client; got {executor!r}")


def default_workers() -> int:
    """The cores this process may use (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pool_size(max_workers: Optional[int], tasks: int) -> int:
    """Workers of a pool made here: ``max_workers`` (None or 0: ``default_workers()``), at most
    one per task (a negative count is passed on, and the pool rejects it)."""
    return min(max_workers or default_workers(), tasks)


def parallelism(executor: Any, max_workers: Optional[int], tasks: int) -> int:
    """How many tasks ``run_tasks(..., executor, max_workers, ...)`` runs at once: a Client's
    worker threads, a pool made here its size, a given Executor its ``_max_workers`` (0 when
    it does not say)."""
    if is_dask_client(executor):
        return int(sum(executor.nthreads().values()))
    if executor in (None, "threads", "processes"):
        return pool_size(max_workers, tasks)
    return int(getattr(executor, "_max_workers", 0) or 0)


def run_tasks(fn: Callable[[T], R], tasks: Sequence[T], executor: Any, max_workers: Optional[int], bar: Progress,
              *, thread_name: str, annotate: Optional[Annotate] = None) -> List[R]:
    """``[fn(t) for t in tasks]`` on ``executor``, gathered as they complete (``bar.update()``
    after each success); returns the results in task order.

    On a failure the tasks not yet started are cancelled, those already running are let finish,
    and the error of the lowest-index failed task is raised (the worker's own exception, passed
    through ``annotate(index, error)`` first when given: e.g. to add a note naming the task).
    ``thread_name`` prefixes the names of a thread pool's threads. ValueError (see
    ``check_executor``) for an executor of another kind, before anything runs."""
    check_executor(executor)
    if is_dask_client(executor):
        return _run_dask(fn, tasks, executor, bar, annotate)
    import concurrent.futures as cf

    own = True
    if executor is None or executor == "threads":
        pool: cf.Executor = cf.ThreadPoolExecutor(pool_size(max_workers, len(tasks)), thread_name_prefix=thread_name)
    elif executor == "processes":
        import multiprocessing

        # forkserver/spawn: never fork a process that has threads running (Dask, tqdm, ...).
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        pool = cf.ProcessPoolExecutor(pool_size(max_workers, len(tasks)), mp_context=multiprocessing.get_context(method))
    else:
        pool, own = executor, False
    results: List[Optional[R]] = [None] * len(tasks)
    failures: Dict[int, BaseException] = {}
    futures: Dict[cf.Future, int] = {}
    try:
        for i, t in enumerate(tasks):
            futures[pool.submit(fn, t)] = i
        for fut in cf.as_completed(futures):
            i = futures[fut]
            if fut.cancelled():
                continue
            err = fut.exception()
            if err is not None:
                failures[i] = err
                for f in futures:
                    f.cancel()
                continue
            results[i] = fut.result()
            bar.update()
    except BaseException as exc:
        for f in futures:
            f.cancel()
        if isinstance(exc, KeyboardInterrupt) and not isinstance(pool, cf.ProcessPoolExecutor):
            # Ctrl-C: the runs under way in this process's threads stop too (each raises
            # KeyboardInterrupt in its thread) instead of running to the end.
            from . import _core

            _core.request_interrupt()
            try:
                if own:
                    pool.shutdown(wait=True, cancel_futures=True)
                    own = False
                else:
                    cf.wait([f for f in futures if not f.cancelled()])
            finally:
                _core.clear_interrupt()
        raise
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)
    return _gathered(results, failures, annotate)


def _gathered(results: List[Optional[R]], failures: Dict[int, BaseException], annotate: Optional[Annotate]) -> List[R]:
    """The results, or the lowest-index failure raised (annotated)."""
    if failures:
        i = min(failures)
        raise failures[i] if annotate is None else annotate(i, failures[i])
    return results  # type: ignore[return-value]


def _run_dask(fn: Callable[[T], R], tasks: Sequence[T], client: Any, bar: Progress,
              annotate: Optional[Annotate]) -> List[R]:
    """``run_tasks`` on a dask.distributed.Client (its ``as_completed``)."""
    from distributed import as_completed

    futures = client.map(fn, list(tasks), pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    results: List[Optional[R]] = [None] * len(tasks)
    failures: Dict[int, BaseException] = {}
    try:
        for fut in as_completed(futures):
            i = index[fut.key]
            if fut.status == "error":
                failures[i] = fut.exception()
                client.cancel([f for f in futures if not f.done()])
                continue
            if fut.status == "cancelled":
                continue
            results[i] = fut.result()
            bar.update()
    except BaseException:
        client.cancel(futures)
        raise
    return _gathered(results, failures, annotate)
