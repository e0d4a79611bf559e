"""The package stands alone: it never imports experiments/ or benchmarks/, never edits
``sys.path``, and theory/ stays below compare/; artefact scripts import the library, not each
other; the paper's numbers are written once."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "copyhead_jax"


def _registered_modules() -> tuple[str, ...]:
    """The modules of ``experiments.common.ARTEFACTS`` (read from the source: no import)."""
    tree = ast.parse((ROOT / "experiments" / "common.py").read_text())
    (table,) = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                and ast.unparse(n.targets[0]) == "ARTEFACTS"]  # fmt: skip
    return tuple(module for module, _, _ in table.values())


#: every script: the registered artefacts' modules, ``spec`` and ``cli`` (``report/`` is the one
#: place that renders markdown, which scripts may import; it imports no script: tested below)
ARTEFACT_SCRIPTS = tuple(sorted(set(_registered_modules())))


def _sources(folder: Path):
    files = sorted(folder.rglob("*.py"))
    assert files, folder
    return [(f, f.read_text()) for f in files]


OUTSIDE = re.compile(
    r"^\s*(from|import)\s+(experiments|benchmarks)\b"
    r"|import_module\(\s*[\"'](experiments|benchmarks)"
    r"|sys\.path",
    re.M,
)


def test_package_sources_never_reach_outside_the_package():
    bad = [f"{f.relative_to(ROOT)}: {m.group(0).strip()}"
           for f, text in _sources(PKG) for m in OUTSIDE.finditer(text)]  # fmt: skip
    assert bad == []


def test_the_pattern_catches_what_it_should():
    for line in (
        "from experiments import main",
        "import benchmarks.render",
        'importlib.import_module("experiments.common")',
        "sys.path.insert(0, root)",
    ):
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search("# the experiments import this package")


def test_importing_the_package_and_its_command_loads_nothing_outside():
    code = (
        "import sys, copyhead_jax, copyhead_jax.cli, copyhead_jax.compare\n"
        "copyhead_jax.cli.build_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('experiments', 'benchmarks')))"
    )
    # run from the package's parent's parent: the repository root is not on sys.path there
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "[]"


def test_theory_does_not_import_compare():
    hits = [str(f.relative_to(ROOT)) for f, text in _sources(PKG / "theory")
            if re.search(r"^\s*from\s+(\.\.|copyhead_jax\.)compare\b", text, re.M)]  # fmt: skip
    assert hits == []


def _imports_artefact(text: str, others: str) -> bool:
    pat = (
        rf"^\s*from\s+(\.+|experiments)\s+import\s+.*\b({others})\b"
        rf"|^\s*from\s+(\.+|experiments\.)({others})\s+import"
    )
    return re.search(pat, text, re.M) is not None


def test_every_script_is_registered():
    """A module of experiments/ with a ``main`` or a ``__main__`` block is an artefact of the
    registry (so the import check below sees every script)."""
    entry = re.compile(r"^def main\(|^if __name__ == .__main__.:", re.M)
    scripts = {f.stem for f in (ROOT / "experiments").glob("*.py")
               if f.stem != "__main__" and entry.search(f.read_text())}  # fmt: skip
    assert scripts == set(ARTEFACT_SCRIPTS)
    assert {"posterior", "posterior_smc", "multistart", "embeddings", "conventions",
            "reading"} <= set(_registered_modules())  # fmt: skip


def test_the_report_imports_no_artefact_script():
    """``experiments/report/`` draws every figure through the package (redraw included)."""
    text = "".join(f.read_text() for f in sorted((ROOT / "experiments" / "report").glob("*.py")))
    assert not _imports_artefact(text.replace("from ..", "from ."), "|".join(ARTEFACT_SCRIPTS))


@pytest.mark.parametrize("name", ARTEFACT_SCRIPTS)
def test_artefact_scripts_do_not_import_each_other(name):
    text = (ROOT / "experiments" / f"{name}.py").read_text()
    others = "|".join(a for a in ARTEFACT_SCRIPTS if a != name)
    assert not _imports_artefact(text, others)
    # the check itself: the imports the scripts used to have are caught
    assert _imports_artefact("from . import main as M\n", "main|report")
    assert _imports_artefact("from .report import f\n", "main|report")
    assert _imports_artefact("from .posterior import branch_config\n", "posterior|reading")
    assert _imports_artefact("from . import analysis, coverage, scaling\n", "coverage")
    assert not _imports_artefact("from . import posterior_runs as PR\n", "posterior")


def test_the_papers_numbers_are_written_once():
    defs = re.compile(r"^(PAPER_MEASURED|PAPER_CLAIMS|PAPER_LAWS|LAWS)\s*[:=]", re.M)
    where = sorted(
        f"{f.relative_to(ROOT)}:{m.group(1)}"
        for folder in (PKG, ROOT / "experiments")
        for f, text in _sources(folder)
        for m in defs.finditer(text)
    )
    # PAPER_LAWS: the law functions live with the theory's fits; compare.paper re-exports them
    assert where == [
        "copyhead_jax/compare/paper.py:PAPER_CLAIMS",
        "copyhead_jax/compare/paper.py:PAPER_MEASURED",
        "copyhead_jax/theory/scaling.py:PAPER_LAWS",
    ]
    from copyhead_jax.compare import paper
    from copyhead_jax.theory.scaling import PAPER_LAWS

    assert paper.PAPER_LAWS is PAPER_LAWS


def _module_names() -> set[str]:
    names = set()
    for f in PKG.rglob("*.py"):
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _is_private(dotted: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in dotted.split("."))


def _package_uses(text: str, modules: set[str]) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of what ``text`` takes from copyhead_jax: every import (at any
    depth), and every attribute or ``setattr`` name of a module it bound, cut one name past the
    module (``ch.sweep.f._cache_size`` -> ``copyhead_jax.sweep.f``)."""
    tree, out, bound = ast.parse(text), [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append((node.lineno, a.name))
                top = a.name.split(".")[0]
                bound[a.asname or top] = a.name if a.asname else top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                out.append((node.lineno, f"{node.module}.{a.name}"))
                if f"{node.module}.{a.name}" in modules:
                    bound[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        chain, v = [], node
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("setattr"):
            if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant):
                continue
            chain, v = [str(node.args[1].value)], node.args[0]
        while isinstance(v, ast.Attribute):
            chain, v = [v.attr, *chain], v.value
        if chain and isinstance(v, ast.Name) and v.id in bound:
            out.append((node.lineno, ".".join([bound[v.id], *chain])))
    cut = []
    for line, name in out:
        parts = name.split(".")
        if parts[0] != "copyhead_jax":
            continue
        i = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in modules)
        cut.append((line, ".".join(parts[: i + 1])))
    return cut


# Tests of a private module's own behaviour, the only private imports allowed outside the package.
PRIVATE_ALLOWED = {
    ("tests/test_runtime.py", "copyhead_jax._runtime"),  # the import-time XLA pool guard itself
    ("tests/models/test_head.py", "copyhead_jax.models._compute"),  # patches its SEQ_BLOCK knob
}


def _allowed(path: str, name: str) -> bool:
    return any(p == path and (name + ".").startswith(m + ".") for p, m in PRIVATE_ALLOWED)


def test_nothing_outside_the_package_imports_a_private_name_of_it():
    modules = _module_names()
    bad = sorted(
        (str(f.relative_to(ROOT)), name, line)
        for folder in ("experiments", "benchmarks", "tests")
        for f, text in _sources(ROOT / folder)
        for line, name in set(_package_uses(text, modules))
        if _is_private(name) and not _allowed(str(f.relative_to(ROOT)), name)
    )
    assert bad == []
    caught = (
        "from copyhead_jax.sweep import (\n    run_sweep,\n    _x,\n)\nimport copyhead_jax._y\n"
        "import copyhead_jax as ch\nfrom copyhead_jax import sweep as S\nch.sweep._z.f()\n"
        "S.run_sweep._cache_size()\nmonkeypatch.setattr(S, '_w', None)\n"
    )
    assert sorted({n for _, n in _package_uses(caught, modules) if _is_private(n)}) == [
        "copyhead_jax._y", "copyhead_jax.sweep._w", "copyhead_jax.sweep._x", "copyhead_jax.sweep._z"
    ]  # fmt: skip


def _import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the package modules it imports, from ``{module: (source, is_package)}``.

    Every ``import`` counts, at any depth (function-level and ``TYPE_CHECKING`` ones too), and
    importing ``a.b.c`` from outside ``a.b`` also runs ``a.b``'s ``__init__``."""
    graph = {}
    for name, (text, is_pkg) in sources.items():
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                mod = ".".join([*base, *([node.module] if node.module else [])])
                for a in node.names:
                    targets.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in sources else mod)
        edges = set()
        for t in targets:
            parts = t.split(".")
            for i in range(2, len(parts) + 1):  # the root package is always already importing
                pre = ".".join(parts[:i])
                if i == len(parts) or not name.startswith(pre + "."):
                    edges.add(pre)
        graph[name] = {m for m in edges if m in sources and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_circle():
    sources = {}
    for f in PKG.rglob("*.py"):
        parts = f.relative_to(ROOT).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        sources[".".join(parts[:-1] if is_pkg else parts)] = (f.read_text(), is_pkg)
    graph = _import_graph(sources)
    assert graph["copyhead_jax.sweep.run"] >= {"copyhead_jax.fit", "copyhead_jax.config"}
    assert _cycles(graph) == []
    # the check itself: a lazy import inside a function, and a subpackage's __init__, count
    toy = {
        "p": ("from . import a", True),
        "p.a": ("from .q.c import f", False),
        "p.q": ("from .b import g", True),
        "p.q.b": ("def g():\n    from ..a import h", False),
        "p.q.c": ("", False),
    }
    assert _cycles(_import_graph(toy)) == [["p.a", "p.q", "p.q.b"]]


def test_inside_the_package_private_names_stay_in_their_module():
    modules = _module_names()
    bad = []
    for f, text in _sources(PKG):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                here = ".".join(f.relative_to(ROOT).with_suffix("").parts[: -node.level or None])
                mod = ".".join(filter(None, [here if node.level else "", node.module or ""]))
                bad += [f"{f.relative_to(ROOT)}:{node.lineno}: {a.name}" for a in node.names
                        if _is_private(a.name) and f"{mod}.{a.name}" not in modules]  # fmt: skip
    assert bad == []
