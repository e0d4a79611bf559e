"""docs/guide/architecture.md is true of the package: its flow chain orders every module so that
each imports only to its left, and its table has one row per folder and one for the top-level
modules, names every module, and only names that exist."""

import importlib
import re
from pathlib import Path

import pytest

from tests.test_package_hygiene import _import_graph

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "copyhead_jax"
DOC = ROOT / "docs" / "guide" / "architecture.md"
IDENT = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(\(\))?")


def _modules() -> dict[str, tuple[str, bool]]:
    """``{dotted module name: (source, is_package)}`` of every file of the package."""
    out = {}
    for f in sorted(PKG.rglob("*.py")):
        parts = f.relative_to(ROOT).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (f.read_text(), is_pkg)
    return out


def _room(module: str) -> str:
    """The flow chain's name of a module: ``data`` for ``copyhead_jax.data``, ``theory/`` for
    any module of the theory subpackage."""
    parts = module.split(".")[1:]
    if (PKG / parts[0]).is_dir():
        return parts[0] + "/"
    return parts[0]


def _flow(text: str) -> list[list[str]]:
    """The groups of the ```flow block, left to right."""
    block = re.search(r"```flow\n(.*?)```", text, re.S)
    assert block, "architecture.md has no ```flow block"
    return [[n.strip() for n in g.split(",") if n.strip()] for g in block[1].split("─▶")]


def flow_violations(groups: list[list[str]], graph: dict[str, set[str]]) -> list[str]:
    """Edges ``a -> b`` (module imports module) whose ``b`` stands right of ``a`` in ``groups``;
    imports inside one room (a subpackage) are free."""
    rank = {name: i for i, g in enumerate(groups) for name in g}
    bad = []
    for a, targets in graph.items():
        for b in targets:
            ra, rb = _room(a), _room(b)
            if ra != rb and rank[rb] > rank[ra]:
                bad.append(f"{a} imports {b}, which stands to its right")
    return sorted(bad)


def test_the_flow_chain_names_every_room_once_and_only_rooms():
    mods = [m for m in _modules() if m != "copyhead_jax"]
    rooms = {_room(m) for m in mods}
    names = [n for g in _flow(DOC.read_text()) for n in g]
    assert sorted(names) == sorted(set(names)), "a room stands twice in the chain"
    assert set(names) == rooms


def test_every_import_goes_left_along_the_flow_chain():
    sources = _modules()
    graph = {m: t for m, t in _import_graph(sources).items() if m != "copyhead_jax"}
    assert graph["copyhead_jax.sweep.run"] >= {"copyhead_jax.fit"}  # the graph is not empty
    assert flow_violations(_flow(DOC.read_text()), graph) == []
    # the check itself: an import to the right is caught, one inside a subpackage is not
    toy = {
        "copyhead_jax.data": {"copyhead_jax.sweep.run"},
        "copyhead_jax.theory.a": {"copyhead_jax.theory.b"},
    }
    assert flow_violations([["data", "theory/"], ["sweep/"]], toy) == [
        "copyhead_jax.data imports copyhead_jax.sweep.run, which stands to its right"
    ]


def _table() -> list[tuple[list[str], str]]:
    """Rows of the folders table: (backticked names of the first column, the whole row)."""
    text = DOC.read_text().split("## Folders", 1)[1]
    rows = []
    for line in text.splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("folder", "---"):
            continue
        rows.append((re.findall(r"`([^`]+)`", cells[0]), line))
    assert len(rows) > 10, "the folders table was not found"
    return rows


def test_one_row_per_folder_and_one_for_the_top_level_modules():
    folders = sorted(p.name + "/" for p in PKG.iterdir() if (p / "__init__.py").exists())
    top = sorted(f.name for f in PKG.glob("*.py") if f.name != "__init__.py")
    firsts = [first for first, _ in _table()]
    assert sorted(n for first in firsts for n in first if n.endswith("/")) == folders
    assert all(len(first) == 1 for first in firsts if first[0].endswith("/"))
    (core,) = [first for first in firsts if not first[0].endswith("/")]
    assert sorted(core) == top


def _row_modules(first: list[str]) -> list[str]:
    """The dotted modules a row's first column names (a subpackage: it and its submodules)."""
    out = []
    for n in first:
        if n.endswith(".py"):
            out.append("copyhead_jax." + n.removesuffix(".py"))
        elif n.endswith("/"):
            sub = n.rstrip("/")
            out += [f"copyhead_jax.{sub}"] + [
                f"copyhead_jax.{sub}.{f.stem}"
                for f in sorted((PKG / sub).glob("*.py"))
                if f.stem != "__init__"
            ]
    return out


def test_the_rooms_table_names_every_module_of_the_package():
    rows = _table()
    missing = []
    for m, (_, is_pkg) in _modules().items():
        parts = m.split(".")[1:]
        if not parts:
            continue  # the package's __init__
        if len(parts) == 1 and not is_pkg:
            if not any(f"{parts[0]}.py" in first for first, _ in rows):
                missing.append(m)
        else:  # in a folder (maybe a folder's folder: its own name, and its modules)
            sub, rest = parts[0], parts[1:]
            home = [row for first, row in rows if f"{sub}/" in first]
            leaf = f"`{rest[-1]}/`" if is_pkg and rest else f"`{rest[-1]}.py`" if rest else ""
            named = lambda row: leaf in row or f"`{'/'.join(parts)}.py`" in row
            if not home or not any(named(row) for row in home):
                missing.append(m)
    assert missing == []


@pytest.mark.parametrize("row", range(len(_table())))
def test_every_name_in_a_rooms_row_exists(row):
    first, line = _table()[row]
    subs = [n.rstrip("/") for n in first if n.endswith("/")]
    modules = [importlib.import_module(m) for m in ["copyhead_jax", *_row_modules(first)]]
    bad = []
    for name in re.findall(r"`([^`]+)`", line):
        if name == "copyhead":  # the console command
            ok = 'copyhead = "copyhead_jax.cli:main"' in (ROOT / "pyproject.toml").read_text()
        elif name.endswith("/"):
            ok = (PKG / name).is_dir() or any((PKG / s / name).is_dir() for s in subs)
        elif name.endswith(".py"):
            ok = (PKG / name).is_file() or any(any((PKG / s).rglob(name)) for s in subs)
        elif IDENT.fullmatch(name):
            ok = any(_resolves(mod, name.removesuffix("()")) for mod in modules)
        else:
            continue  # prose in code font (`L x L`, `PJRT_NPROC=1`, `copyhead sweep`)
        if not ok:
            bad.append(name)
    assert bad == []


def _resolves(mod, dotted: str) -> bool:
    """``mod.a.b`` exists (an attribute chain, or a submodule of the package)."""
    try:
        importlib.import_module(f"copyhead_jax.{dotted}")
        return True
    except ImportError:
        pass
    obj = mod
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True
