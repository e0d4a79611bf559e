"""A guard against a deadlock in jaxlib's CPU linear algebra on machines with few cores.

jaxlib's batched LAPACK kernels (Cholesky, LU, triangular solve, eigh; ``jax::ParallelBatchMap``
in ``jaxlib/cpu/_lapack.so``) split a large batch into chunks, schedule them on XLA's intra-op
thread pool and block until they finish. XLA's CPU runtime runs independent operations of one
program concurrently on that same pool. When as many batched LAPACK calls run at once as the
pool has threads, every worker waits for chunks that no free worker can run: the process
sleeps forever at 0% CPU. ``gdb`` on a frozen test (2 cores, pool of 2) showed both
``tf_XLAEigen`` workers in ``ParallelBatchMap`` -> ``BlockingCounter::Wait`` under
``lapack_dpotrf_ffi``, twelve other workers idle; ``--xla_cpu_multi_thread_eigen=false`` does not
help, a one-thread pool does (the kernels then run their batch inline).

The pool size comes from the environment variable ``PJRT_NPROC`` (or ``NPROC``), read once when
the CPU backend starts. On a machine with at most ``SMALL_MACHINE_CORES`` cores, importing
copyhead_jax sets ``PJRT_NPROC=1`` unless the user set it or the backend has already started;
measured on 2 cores it changes sweep and test wall times by under 3%. Set ``PJRT_NPROC``
yourself to override (``COPYHEAD_KEEP_XLA_POOL=1`` leaves the environment untouched).

On the same machines each process also gets one BLAS thread (:func:`one_blas_thread`). OpenBLAS
(under NumPy, and under SciPy, whose LAPACK jaxlib's CPU kernels call) starts a thread per core
whose idle threads spin; with two such processes on two cores (a regeneration beside a test
run, ``pytest -n 2``) they take the cores from each other. Measured on 2 cores at load ~3.7: a
225 x 225 ``jnp.linalg.lstsq`` 587 -> 6.6 CPU-ms, its ``jax.hessian`` 70 -> 11 CPU-ms (the
Markov theory's Newton steps); the main job's sweep is bit-identical and as fast. Setting any of
``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` (or
``COPYHEAD_KEEP_BLAS_THREADS=1``) keeps the user's choice.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading

SMALL_MACHINE_CORES = 4


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _backend_started() -> bool:
    xb = sys.modules.get("jax._src.xla_bridge")
    return bool(getattr(xb, "_backends", None))


def avoid_lapack_pool_deadlock() -> bool:
    """Set ``PJRT_NPROC=1`` on a small machine before JAX's CPU backend starts; True if set."""
    env = os.environ
    if env.get("COPYHEAD_KEEP_XLA_POOL") or "PJRT_NPROC" in env or "NPROC" in env:
        return False
    if usable_cores() > SMALL_MACHINE_CORES or _backend_started():
        return False
    env["PJRT_NPROC"] = "1"
    return True


BLAS_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> bool:
    """One BLAS thread per process on a small machine (module docstring): the environment for
    BLAS libraries loaded later, ``threadpoolctl`` for those already loaded (it is the standard
    way to resize a loaded OpenBLAS or MKL); True if limited."""
    env = os.environ
    if env.get("COPYHEAD_KEEP_BLAS_THREADS") or any(v in env for v in BLAS_THREAD_ENV):
        return False
    if usable_cores() > SMALL_MACHINE_CORES:
        return False
    env["OPENBLAS_NUM_THREADS"] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")
    return True


#: where the console commands keep JAX's persistent compilation cache (``COPYHEAD_JAX_CACHE``:
#: a folder, or ``off``); every program is kept (a theory command compiles ~100 of 0.1-5 s)
CACHE_ENV, CACHE_MIN_COMPILE_S = "COPYHEAD_JAX_CACHE", 0.0


def cache_dir() -> str | None:
    """The compilation cache folder of the console commands (None: off). JAX's own
    ``JAX_COMPILATION_CACHE_DIR`` wins; else ``COPYHEAD_JAX_CACHE``; else
    ``$XDG_CACHE_HOME/copyhead_jax/xla`` (``~/.cache/copyhead_jax/xla``)."""
    env = os.environ
    if env.get("JAX_COMPILATION_CACHE_DIR"):
        return None  # the user configured JAX directly
    chosen = env.get(CACHE_ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "0", "off", "no", "false") else chosen
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "copyhead_jax", "xla")


def enable_compilation_cache() -> str | None:
    """Keep compiled XLA programs across runs of the console commands (JAX's persistent cache:
    a second run of a command skips its compilation, most of a theory command's time). The
    numbers do not change: the cache key is the program, its compiler options and the JAX and
    jaxlib versions. Returns the folder, or None when off or the folder cannot be made."""
    path = cache_dir()
    if path is None:
        return None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    import jax

    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_S)
    return path


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's ``KeyboardInterrupt`` so that the same
    clean-up runs (kept chunks, locks); a command then exits with 143 instead of 130."""


#: seconds the main thread gets to see a signal before the watcher ends the process, and then
#: for the interrupt it raised to reach a command's handler (:func:`interrupt_status`)
SIGNAL_GRACE_S, CAUGHT_GRACE_S = 2.0, 5.0
_signal_seen = threading.Event()  # set once the main thread's Python handler ran
_signal_caught = threading.Event()  # set once a command's handler caught the interrupt


#: seconds after which a signal that arrived inside a garbage-collector callback is delivered
#: again (the collection is over by then)
REDELIVER_S = 0.05
_redelivered = [0]  # re-deliveries queued, each one a byte in the wakeup pipe the watcher skips
_redelivered_lock = threading.Lock()


def _swallows_exceptions(frame) -> bool:
    """True if ``frame`` runs inside a garbage-collector callback or a ``__del__``, where Python
    swallows an exception ("Exception ignored in") instead of raising it in the command."""
    callbacks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        if frame.f_code in callbacks or frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _raise_interrupt(signum, frame):
    if _swallows_exceptions(frame):  # seen: JAX's _xla_gc_callback; raise it once gc is done
        with _redelivered_lock:
            _redelivered[0] += 1
        threading.Timer(REDELIVER_S, os.kill, (os.getpid(), signum)).start()
        return
    _signal_seen.set()
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _is_redelivery() -> bool:
    with _redelivered_lock:
        if _redelivered[0]:
            _redelivered[0] -= 1
            return True
        return False


def _watch_signals(read_fd: int, farewell) -> None:
    """End the process if the main thread cannot see a signal within :data:`SIGNAL_GRACE_S`.

    Python runs a signal handler only when the main thread is back in the interpreter; inside a
    compiled XLA call (one transition group at the paper's size: minutes) it is not. The C-level
    handler writes the signal number to ``read_fd``'s pipe (``signal.set_wakeup_fd``) at once,
    and this thread (XLA releases the GIL while it computes) ends the process like the main
    thread would: the farewell line, locks released, 130 or 143. Finished work is on disk
    already (every writer is atomic), so cutting the running computation loses only itself.
    It does the same when the handler ran but its interrupt did not reach a command's handler
    within :data:`CAUGHT_GRACE_S`: Python swallows an exception raised where it cannot propagate
    ("Exception ignored in": a weakref callback; a gc callback or ``__del__`` the handler
    recognises and defers), and the command would otherwise run on as if no signal had come."""
    while True:
        try:
            signum = os.read(read_fd, 1)[0]
        except (OSError, IndexError):
            return
        if signum not in (signal.SIGINT, signal.SIGTERM) or _is_redelivery():
            continue
        if _signal_seen.wait(SIGNAL_GRACE_S):
            _signal_seen.clear()
            if _signal_caught.wait(CAUGHT_GRACE_S):
                continue  # the main thread handles it
        logging.getLogger(__name__).critical(f"\n{farewell()}")  # shown with or without a handler
        exit_now(128 + signum)


def catch_sigterm(farewell=None) -> bool:
    """SIGTERM ends a command like Ctrl-C (``Terminated``, exit 143; Ctrl-C: 130), and both
    are answered within :data:`SIGNAL_GRACE_S` seconds even inside a long compiled
    computation, ``farewell()`` (a one-line message) then printed. Main thread only; True if
    installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, _raise_interrupt)
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    said = farewell or (
        lambda: "interrupted; finished work is kept; rerun the same command to resume"
    )
    threading.Thread(target=_watch_signals, args=(read_fd, said), daemon=True).start()
    return True


def interrupt_status(e: BaseException) -> int:
    """Exit status of a command stopped by ``e``: 143 for SIGTERM, 130 for SIGINT (128 + n).
    A command calls it where it catches the interrupt (the signal watcher waits for that)."""
    _signal_caught.set()
    return 128 + (signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT)


def exit_now(status: int) -> None:
    """End the process with ``status`` after an interrupt, skipping interpreter teardown.

    An interrupt leaves XLA's worker threads inside the computation it cut short (collapsed
    HMC: ``copyhead sample`` interrupted 3 s in exited with a segfault, rc 139, after its
    message): tearing the interpreter down under them crashes. The locks this process holds are
    released and the streams flushed first; what the command kept is on disk already."""
    from .storage import release_held_locks

    release_held_locks()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


avoid_lapack_pool_deadlock()  # on import: copyhead_jax imports this module first
one_blas_thread()
