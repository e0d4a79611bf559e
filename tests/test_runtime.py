"""The deadlock guard (copyhead_jax/_runtime.py) sets JAX's CPU pool size only when it should."""

import os
import signal
import subprocess
import sys
import time

import pytest

from copyhead_jax import _runtime
from tests.helpers import interrupt

SNIPPET = "import os, copyhead_jax; print(os.environ.get('PJRT_NPROC', 'unset'))"


def _after_import(snippet: str, drop, **env) -> str:
    """What ``snippet`` prints in a new interpreter without ``drop``, plus ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in drop}
    out = subprocess.run(
        [sys.executable, "-c", snippet],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def _pool_after_import(**env):
    return _after_import(SNIPPET, ("PJRT_NPROC", "NPROC"), **env)


@pytest.mark.skipif(
    _runtime.usable_cores() > _runtime.SMALL_MACHINE_CORES, reason="guard is for small machines"
)
def test_small_machine_gets_a_one_thread_pool_unless_the_user_chose():
    assert _pool_after_import() == "1"
    assert _pool_after_import(PJRT_NPROC="2") == "2"  # the user's choice is kept
    assert _pool_after_import(COPYHEAD_KEEP_XLA_POOL="1") == "unset"


BLAS_SNIPPET = """
import numpy, copyhead_jax, jax.numpy as jnp
from threadpoolctl import threadpool_info
jnp.linalg.lstsq(jnp.eye(3), jnp.ones(3))  # loads the LAPACK jaxlib calls (SciPy's OpenBLAS)
print(sorted({d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}))
"""


def _blas_threads_after_import(**env):
    return _after_import(BLAS_SNIPPET, _runtime.BLAS_THREAD_ENV, **env)


@pytest.mark.skipif(
    _runtime.usable_cores() > _runtime.SMALL_MACHINE_CORES, reason="guard is for small machines"
)
def test_small_machine_gets_one_blas_thread_unless_the_user_chose():
    # NumPy's OpenBLAS is loaded before copyhead_jax (resized in place), SciPy's after it (by
    # the environment): every BLAS library of the process runs one thread
    assert _blas_threads_after_import() == "[1]"
    if _runtime.usable_cores() >= 2:  # OpenBLAS runs at most as many threads as it may use cores
        assert _blas_threads_after_import(OPENBLAS_NUM_THREADS="2") == "[2]"


def test_blas_guard_keeps_the_users_switch(monkeypatch):
    for v in _runtime.BLAS_THREAD_ENV:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("COPYHEAD_KEEP_BLAS_THREADS", "1")
    assert _runtime.one_blas_thread() is False
    assert "OPENBLAS_NUM_THREADS" not in os.environ


def test_guard_does_nothing_once_the_backend_has_started(monkeypatch):
    import jax

    jax.devices()  # the backend is running in this process
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    monkeypatch.delenv("NPROC", raising=False)
    assert _runtime.avoid_lapack_pool_deadlock() is False
    assert "PJRT_NPROC" not in os.environ


#: one compiled loop of 10^12 steps (hours): Python cannot run a signal handler inside it
SPIN = """
import jax, jax.numpy as jnp, copyhead_jax as ch
ch.catch_sigterm(lambda: "spin: interrupted")
inner = lambda i, v: jax.lax.fori_loop(0, 10**9, lambda j, u: u * 0.999999 + 1e-7, v)
spin = jax.jit(lambda x: jax.lax.fori_loop(0, 1000, inner, x))
lowered = spin.lower(jnp.float32(1.0)).compile()
print("started", flush=True)
print(float(lowered(jnp.float32(1.0))))
"""


# SIGINT and SIGTERM reach one handler and one watcher (catch_sigterm); the second signal of a
# pair below runs in the slow set, each signal still ends a compiled computation by default
# (SIGTERM: the exact solver's and the experiments' tests)
ONE_SIGNAL_THEN_SLOW = [
    (signal.SIGINT, 130),
    pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("sig, rc", ONE_SIGNAL_THEN_SLOW)
def test_a_signal_ends_a_long_compiled_computation_within_seconds(sig, rc):
    proc = subprocess.Popen(
        [sys.executable, "-c", SPIN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "started"
    time.sleep(0.5)  # inside the compiled loop
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    # the watcher answers after SIGNAL_GRACE_S (2 s); 20 s leaves room for a loaded machine,
    # and the loop alone would run for minutes
    assert time.monotonic() - t0 < 20
    assert proc.returncode == rc, err
    assert "spin: interrupted" in err and "Traceback" not in err


#: the interrupt raised inside a weakref callback, where Python swallows it ("Exception ignored
#: in") and the handler cannot tell; the main thread then sleeps on
SWALLOWED = """
import signal, time, weakref, copyhead_jax as ch
ch.catch_sigterm(lambda: "swallowed: interrupted")
class Box:
    pass
def on_collect(ref):
    signal.raise_signal(signal.SIGINT)
    sum(range(1000))  # the handler runs here, inside the weakref callback
box = Box()
ref = weakref.ref(box, on_collect)
del box
print("swallowed", flush=True)
while True:
    time.sleep(0.1)
"""


def test_an_interrupt_python_swallows_still_ends_the_process():
    proc = subprocess.Popen(
        [sys.executable, "-c", SWALLOWED], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "swallowed" in out and "Exception ignored" in err  # the case this test is about
    # SIGNAL_GRACE_S + CAUGHT_GRACE_S = 7 s, the rest room for a loaded machine (without the
    # watcher's second wait the process would sleep until the 60 s timeout)
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 130, err
    assert "swallowed: interrupted" in err


#: the interrupt arriving inside a garbage-collector callback (as inside JAX's
#: _xla_gc_callback, where a CI run once printed "Exception ignored in" and a traceback) and
#: inside a __del__: the handler defers it until the collection is over, and the command's own
#: handler catches it
DEFERRED = """
import gc, signal, sys, time, copyhead_jax as ch
ch.catch_sigterm(lambda: "deferred: watcher ended it")
def in_gc(phase, info):
    if phase == "start" and not fired:
        fired.append(1)
        signal.raise_signal(signal.SIG)
        sum(range(1000))  # the handler runs here, inside the callback
fired = []
class Finaliser:
    def __del__(self):
        signal.raise_signal(signal.SIG)
        sum(range(1000))
try:
    if WHERE == "gc":
        gc.callbacks.append(in_gc)
        gc.collect()
    else:
        Finaliser()
    for _ in range(100):
        time.sleep(0.1)
    print("not interrupted", flush=True)
except KeyboardInterrupt as e:
    print("caught", type(e).__name__, flush=True)
    ch.exit_now(ch.interrupt_status(e))
"""


@pytest.mark.parametrize("where, sig, rc", [("gc", "SIGTERM", 143), ("del", "SIGINT", 130)])
def test_an_interrupt_inside_gc_reaches_the_command(where, sig, rc):
    code = DEFERRED.replace("signal.SIG)", f"signal.{sig})").replace("WHERE", repr(where))
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "Exception ignored" not in got.stderr and "Traceback" not in got.stderr
    assert got.returncode == rc, got.stderr
    assert got.stdout.startswith("caught"), got.stdout
    assert "watcher ended it" not in got.stderr  # the command, not the backstop, ended it


# signals end a command cleanly (130 / 143), no traceback, no lock left (moved from
# test_bad_input.py)


@pytest.mark.parametrize("sig, rc", ONE_SIGNAL_THEN_SLOW)
def test_signals_end_a_sweep_cleanly(sig, rc, tmp_path):
    argv = (
        "sweep --preset tiny --P 2,4 --n-seeds 1 --max-epochs 1000000 "
        "--min-epochs 900000 --out r.npz --quiet --no-plot"
    ).split()
    got, err = interrupt(argv, sig, tmp_path)
    assert got == rc, err
    assert "Traceback" not in err and "copyhead: interrupted" in err
    assert not (tmp_path / "r.npz.lock").exists() and not (tmp_path / "r.npz").exists()


def test_sigterm_ends_the_exact_solver_with_continuation_cleanly(tmp_path):
    argv = (
        "sweep --preset tiny --engine reduced --exact-continuation --P "
        "2:3000:12log --n-seeds 4 --out r.npz --quiet --no-plot"
    ).split()
    got, err = interrupt(argv, signal.SIGTERM, tmp_path)
    assert got == 143, err
    assert "Traceback" not in err and "copyhead: interrupted" in err
    assert not (tmp_path / "r.npz.lock").exists()


def test_ctrl_c_during_collapsed_hmc_exits_130(reduced, tmp_path):
    """An interrupt early in the reduced sampler (3 s from the start) exited 139
    (segfault in the interpreter's teardown under XLA's running threads); now 130."""
    argv = [
        "sample",
        str(reduced),
        "--out",
        "p.npz",
        "--iterations",
        "20000",
        "--quiet",
        "--no-plot",
    ]
    got, err = interrupt(argv, signal.SIGINT, tmp_path)
    assert got == 130, err
    assert "Traceback" not in err and not (tmp_path / "p.npz.lock").exists()


def test_sigterm_ends_the_experiments_cleanly(tmp_path):
    argv = [
        "main",
        "--tiny",
        "--preset",
        "plain",
        "--out",
        str(tmp_path / "o"),
        "--cache",
        str(tmp_path / "c"),
    ]
    got, err = interrupt(argv, signal.SIGTERM, tmp_path, module="experiments.__main__")
    assert got == 143, err
    assert "Traceback" not in err and "interrupted" in err and "resume" in err


@pytest.mark.parametrize(
    "env, want",
    [
        ({"COPYHEAD_JAX_CACHE": "off"}, None),
        ({"COPYHEAD_JAX_CACHE": "/x/c"}, "/x/c"),
        ({"JAX_COMPILATION_CACHE_DIR": "/j", "COPYHEAD_JAX_CACHE": "/x/c"}, None),
        ({"XDG_CACHE_HOME": "/xdg"}, "/xdg/copyhead_jax/xla"),
    ],
)
def test_compilation_cache_folder_follows_the_environment(monkeypatch, env, want):
    for k in ("COPYHEAD_JAX_CACHE", "JAX_COMPILATION_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert _runtime.cache_dir() == want


def test_compilation_cache_keeps_a_program_across_processes(tmp_path):
    """A second process loads the first one's program from the folder: same answer, and the
    folder holds the entry (JAX's persistent cache, switched on by the console commands)."""
    code = (
        "from copyhead_jax._runtime import enable_compilation_cache as e; import sys; "
        "print(e()); import jax, jax.numpy as jnp; "
        "print(float(jax.jit(lambda x: jnp.sin(x) * 3.0 + x ** 2)(0.7)))"
    )
    env = {**os.environ, "COPYHEAD_JAX_CACHE": str(tmp_path / "xla")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and runs[0][0] == str(tmp_path / "xla")
    assert any((tmp_path / "xla").iterdir())
