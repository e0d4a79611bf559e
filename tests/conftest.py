"""Shared test settings: rank promotion is an error, shapes are small.

Dtype promotion stays "standard": optax's Adam bias correction computes ``b1 ** count`` with an
int32 count, which strict promotion rejects; our own maths is checked in float32/float64 tests.
"""

import contextlib
import os

# XLA's CPU runtime can deadlock on a 2-core machine when batched LAPACK kernels run concurrently
# on its intra-op pool (gdb: both pool workers in jaxlib's ParallelBatchMap; see
# copyhead_jax/_runtime.py). A one-thread pool avoids it and is no slower here; importing
# copyhead_jax sets the same on small machines, the tests set it whatever the machine.
# (The persistent compilation cache below once segfaulted in put_executable_and_time during
# test_theory_finite, jax 0.10.2, with a cache shared across runs; whole suites have run clean
# on a per-run cache since. COPYHEAD_TEST_XLA_CACHE=0 turns it off should it recur.)
os.environ.setdefault("PJRT_NPROC", "1")
# The suite is compile-bound (hundreds of small programs that run for milliseconds), so XLA
# compiles with most optimisations off (JAX's ``jax_disable_most_optimizations``: LLVM at -O0,
# no expensive passes; -O0 through XLA_FLAGS, its earlier form, took the whole idle suite from
# 1,585 to 1,280 s of test time). A module or test whose own compute dominates (a theory
# batch, long chains) is marked ``xla_optimized`` and compiles what it first needs with XLA's
# defaults (see the fixtures below), where that was measured to pay (the marked module
# against itself unmarked, interleaved in one process: the theory batches at the paper's size
# of test_sensitivity.py; the theory points, the double well, the README's numbers and the llc
# runs were faster at -O0 and are unmarked). It moves float32 rounding (no fused
# multiply-adds), so a test that compares float32 numbers from another build states its ulp
# tolerance.
# COPYHEAD_TEST_OPT=default optimises everything (production's code), COPYHEAD_TEST_OPT=O0
# nothing (the marks ignored: what a mark saves is measured against it); subprocesses inherit
# the setting through the environment.
OPTIMIZE_ALL = os.environ.get("COPYHEAD_TEST_OPT", "0") == "default"
IGNORE_MARKS = os.environ.get("COPYHEAD_TEST_OPT", "0") == "O0"
if not OPTIMIZE_ALL:
    os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")


def pytest_configure(config):
    # runs flagged by the health checks of the tests' tiny chains and fits: data (meta, flags),
    # not errors; the tests of each such warning catch it with pytest.warns. Added here, not in
    # pyproject's filterwarnings: pytest resolves those at start-up, and importing the package
    # then would import JAX before the settings above
    config.addinivalue_line("filterwarnings", "ignore::copyhead_jax.RunHealthWarning")


def _xla_accepts(flag: str) -> bool:
    """Whether this jaxlib knows an XLA flag: an unknown one aborts the process that reads it
    (XLA is retiring the elemental CPU route below; openxla/xla#48001). One probe process, ~2 s,
    its answer passed on to the workers and subprocesses through the environment."""
    import subprocess
    import sys

    probe = "import jax.numpy as jnp; jnp.zeros(1).block_until_ready()"
    env = {**os.environ, "XLA_FLAGS": flag, "JAX_PLATFORMS": "cpu"}
    got = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True)
    return got.returncode == 0


# XLA's CPU backend emits a fusion's code through its MLIR fusion emitters by default; the older
# elemental emitters compile the same programs faster (a probe of an Adam sweep, an exact sweep,
# collapsed HMC and the theory's points: 34 -> 20 s at -O0, 45 -> 36 s at XLA's defaults; the
# idle suite 562 -> 382 s; benchmarks/bench_compile.py for the commands). Used where the
# installed jaxlib has them; COPYHEAD_TEST_OPT=default keeps XLA's own emitters.
ELEMENTAL = "--xla_cpu_use_fusion_emitters=false"
if "COPYHEAD_TEST_ELEMENTAL" not in os.environ:
    os.environ["COPYHEAD_TEST_ELEMENTAL"] = str(int(not OPTIMIZE_ALL and _xla_accepts(ELEMENTAL)))
_FLAGS = {"--xla_cpu_multi_thread_eigen": "false"}
if os.environ["COPYHEAD_TEST_ELEMENTAL"] == "1":
    _FLAGS["--xla_cpu_use_fusion_emitters"] = "false"
for _flag, _value in _FLAGS.items():
    if _flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {_flag}={_value}").strip()

# Every jaxtyping annotation of the package is checked at run time (beartype, a test
# dependency): shapes and dtypes of arrays in and out, scalars and containers. The config modules
# are left out: their dataclasses validate their own fields with one-line errors naming the
# parameter and its range, and accept NumPy numbers. So are the validators those fields go
# through (``_checks.py``: they take ``Any`` and judge it themselves, ~180 calls per config
# built, and the wrapper costs more than the check). A test marked ``bad_input`` checks those
# messages for wrongly typed arguments, so the checker (which would refuse them first) is off
# inside it. COPYHEAD_TYPECHECK=0 turns the checker off.
TYPECHECK = os.environ.get("COPYHEAD_TYPECHECK", "1") != "0"
if TYPECHECK:
    import ast
    import importlib.util
    from pathlib import Path

    from jaxtyping import _import_hook as jaxtyping_hook
    from jaxtyping import install_import_hook

    def _annotated(node: ast.FunctionDef) -> bool:
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
        return node.returns is not None or any(
            p is not None and p.annotation is not None for p in params
        )

    # jaxtyping's hook wraps every ``def``, a nested one each time its outer function runs (two
    # checker functions generated and compiled per wrap: milliseconds, and a traced sampler
    # defines thousands of closures). A function with no annotation has nothing to check, so it
    # is left unwrapped: the same checks, fewer wrappers. The hook looks its transformer up by
    # name when it compiles a module (jaxtyping 0.3); where it does not, every function stays
    # wrapped: slower, the same checks.
    _Transformer = getattr(jaxtyping_hook, "JaxtypingTransformer", None)
    if _Transformer is not None:

        class _AnnotatedOnly(_Transformer):
            def visit_FunctionDef(self, node: ast.FunctionDef):
                before = len(node.decorator_list)
                node = super().visit_FunctionDef(node)
                if len(node.decorator_list) > before and not _annotated(node):
                    node.decorator_list.pop()  # the checker, which the hook appends last
                return node

        jaxtyping_hook.JaxtypingTransformer = _AnnotatedOnly

    _root = Path(importlib.util.find_spec("copyhead_jax").origin).parent  # not imported yet
    _skip = {"config/sections.py", "config/solvers.py", "config/samplers.py", "_checks.py"}
    # modules by name (a name covers its submodules, so no package's own __init__)
    _modules = sorted(
        ".".join(("copyhead_jax", *f.relative_to(_root).with_suffix("").parts))
        for f in _root.rglob("*.py")
        if f.relative_to(_root).as_posix() not in _skip and f.name != "__init__.py"
    )
    # an int where a float is annotated is a float (PEP 484's numeric tower)
    install_import_hook(
        _modules, "beartype.beartype(conf=beartype.BeartypeConf(is_pep484_tower=True))"
    )

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")

#: Resident memory (GiB) above which JAX's compiled programs are dropped, at a module's end and
#: after a test: a worker holds at most ~2 GiB between tests. A drop costs the programs' tracing and
#: lowering again when a later test needs them (test_collapsed.py alone, load ~2.5: 123 s with
#: drops after a test above 1.2 GiB, 107 s with COPYHEAD_TEST_CLEAR_MID_GB=100, 1.9 GiB at its
#: peak). The programs are also written to a
#: persistent compilation cache shared by the workers for this run only (a dropped program, or
#: one the other worker compiled, is loaded rather than compiled again). COPYHEAD_TEST_XLA_CACHE=0
#: turns the cache off.
CLEAR_CACHES_ABOVE_GB = float(os.environ.get("COPYHEAD_TEST_CLEAR_GB", "1.5"))
CLEAR_MID_MODULE_ABOVE_GB = float(os.environ.get("COPYHEAD_TEST_CLEAR_MID_GB", "2.0"))
#: whether this process made the cache folder (then it removes it; a folder the caller named in
#: COPYHEAD_TEST_XLA_CACHE_DIR, or the workers' inherited one, is left alone)
_OWN_XLA_CACHE = False
if os.environ.get("COPYHEAD_TEST_XLA_CACHE", "1") == "1":
    if "COPYHEAD_TEST_XLA_CACHE_DIR" not in os.environ:  # the controller: workers inherit it
        import tempfile

        os.environ["COPYHEAD_TEST_XLA_CACHE_DIR"] = tempfile.mkdtemp(prefix="copyhead-tests-xla-")
        _OWN_XLA_CACHE = True
    jax.config.update("jax_compilation_cache_dir", os.environ["COPYHEAD_TEST_XLA_CACHE_DIR"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
# the console commands the tests start use this run's cache (or none), never the user's
os.environ.setdefault("COPYHEAD_JAX_CACHE", os.environ.get("COPYHEAD_TEST_XLA_CACHE_DIR", "off"))


def resident_gb() -> float:
    """This process's resident memory in GiB (0 where /proc is missing: never clear)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30
    except (OSError, ValueError, IndexError):
        return 0.0


def release_memory() -> None:
    """Drop JAX's compiled programs and hand the freed heap back to the OS (glibc keeps freed
    pages otherwise, and the resident size would not fall)."""
    import ctypes
    import gc

    jax.clear_caches()
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def pytest_sessionfinish(session):
    """The process that made this run's compilation cache removes it."""
    import shutil

    if _OWN_XLA_CACHE:
        shutil.rmtree(os.environ["COPYHEAD_TEST_XLA_CACHE_DIR"], ignore_errors=True)


@contextlib.contextmanager
def switched(config, name: str, value, *, when: bool):
    """``config.update(name, value)`` inside (``when``; else nothing changes), then back to
    ``not value`` (both switches below are booleans whose default is ``not value``)."""
    if not when:
        yield
        return
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, not value)


@pytest.fixture(autouse=True)
def package_messages_for_bad_input(request):
    """Inside a ``bad_input`` test the run-time type checker is off (see TYPECHECK above)."""
    import jaxtyping

    on = TYPECHECK and request.node.get_closest_marker("bad_input") is not None
    with switched(jaxtyping.config, "jaxtyping_disable", True, when=on):
        yield


def xla_optimized(on: bool):
    """XLA's default optimisations for what is compiled inside (``on``, unless the whole suite
    already has them). A program compiled before (in memory) is reused as it was compiled."""
    on = on and jax.config.values["jax_disable_most_optimizations"] and not IGNORE_MARKS
    return switched(jax.config, "jax_disable_most_optimizations", False, when=on)


@pytest.fixture(autouse=True, scope="module")
def optimized_module(request):
    """A module marked ``xla_optimized`` (``pytestmark``) compiles optimised, fixtures too."""
    with xla_optimized(request.node.get_closest_marker("xla_optimized") is not None):
        yield


@pytest.fixture(autouse=True)
def optimized_test(request):
    """A test marked ``xla_optimized`` compiles optimised."""
    with xla_optimized(request.node.get_closest_marker("xla_optimized") is not None):
        yield


@pytest.fixture(autouse=True)
def bounded_memory_per_test():
    yield
    if resident_gb() > CLEAR_MID_MODULE_ABOVE_GB:
        release_memory()


@pytest.fixture(autouse=True, scope="module")
def bounded_memory(request):
    yield
    before = resident_gb()
    if before > CLEAR_CACHES_ABOVE_GB:
        release_memory()
    if log := os.environ.get("COPYHEAD_TEST_RSS_LOG"):  # per module: GiB at its end, after
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {request.module.__name__} {before:.2f} {resident_gb():.2f}\n")


@pytest.fixture
def tiny():
    import copyhead_jax as ch

    return ch.TINY


# sweep files shared by the bad-input tests of several modules (test_sample, test_sweep,
# test_results, test_polish, test_cli, test_runtime): session-scoped, so a worker builds each once


@pytest.fixture(scope="session")
def full(tmp_path_factory):
    """A full-engine sweep file with every array and prior-drawn weights (no training: the
    cases below need its shapes, not its fits)."""
    import numpy as np

    from copyhead_jax.results import REQUIRED, SweepResult
    from tests.helpers import SHORT_TINY as TINY

    nP, nS, L, V, N = len(TINY.sweep.P), TINY.sweep.n_seeds, TINY.task.L, TINY.task.V, 16
    rng = np.random.default_rng(0)
    a = {k: rng.uniform(0.1, 1.0, (nP, nS)) for k in REQUIRED}
    a["finite"] = np.ones((nP, nS), bool)
    a["mean_attention"] = np.full((nP, nS, L, L), 1 / L)
    a["positional_logits"] = np.zeros((nP, nS, L, L))
    a["curve_U"] = a["curve_loss"] = np.tile(np.linspace(2.0, 1.0, 4), (nP, nS, 1))
    a["curve_epoch"] = np.arange(1, 5) * 5
    for k, shape in dict(W_E=(N, V), b=(N, L), W_G=(N, N), W_O_hat=(V, N)).items():
        a[f"params/{k}"] = rng.normal(size=(nP, nS, *shape)).astype(np.float32)
    path = tmp_path_factory.mktemp("full") / "full.npz"
    return SweepResult(config=TINY, arrays=a, meta={"wall_seconds": 1.0}).save(path)


@pytest.fixture(scope="session")
def reduced_run(tmp_path_factory):
    """A reduced sweep whose exact fits stop after one step, and its warnings' text."""
    import copyhead_jax as ch
    from tests.helpers import UNCONVERGED

    path = tmp_path_factory.mktemp("reduced") / "reduced.npz"
    with pytest.warns(ch.RunHealthWarning) as seen:
        ch.run_sweep(UNCONVERGED, out=path, progress=False, keep_params=True)
    return path, "\n".join(str(w.message) for w in seen)


@pytest.fixture(scope="session")
def reduced(reduced_run):
    return reduced_run[0]
