"""Every code block of the documentation works: each ```python block of the README and of
docs/guide/ runs (small shapes, seconds) and each ``copyhead ...`` line of a ```bash block (the
reports' too) parses with the real parser (nothing runs), so a renamed flag or a broken example
fails here."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from copyhead_jax.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
REPORTS = [ROOT / "docs" / "README.md", *sorted((ROOT / "docs" / "reports").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(lang: str, pages=PAGES) -> list[tuple[str, int, str]]:
    """``(page, line, code)`` of every fenced block in ``lang`` on ``pages``."""
    out = []
    for page in pages:
        text = page.read_text()
        for m in FENCE.finditer(text):
            if m[1] == lang:
                line = text[: m.start()].count("\n") + 1
                out.append((str(page.relative_to(ROOT)), line, m[2]))
    return out


def copyhead_commands(code: str) -> list[list[str]]:
    """The argument lists of the ``copyhead`` commands of a shell block (comments dropped;
    ``&&``, ``;`` and ``|`` separate commands)."""
    cmds = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        cmd: list[str] = []
        for w in [*words, ";"]:
            if w in ("&&", ";", "|", "||"):
                if cmd and cmd[0] == "copyhead":
                    cmds.append(cmd[1:])
                cmd = []
            else:
                cmd.append(w)
    return cmds


PYTHON = blocks("python")
SHELL = [b for lang in ("bash", "sh", "console") for b in blocks(lang, [*PAGES, *REPORTS])]


def test_the_documented_pages_have_examples_to_check():
    # the collector itself: the README's Python example and its main-job command are found
    assert any(p == "README.md" for p, _, _ in PYTHON)
    cmds = [c for _, _, code in SHELL for c in copyhead_commands(code)]
    assert [
        "sweep",
        "--preset",
        "paper-map",
        "--attention",
        "both",
        "--out",
        "results/paper-map",
    ] in cmds


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_point_to_files_that_exist():
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in [*PAGES, *REPORTS]
        for target in LINK.findall(page.read_text())
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert not broken, broken


@pytest.mark.parametrize("page, line, code", SHELL, ids=[f"{p}:{n}" for p, n, _ in SHELL])
def test_copyhead_commands_parse(page, line, code, capsys):
    parser = build_parser()
    for argv in copyhead_commands(code):
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(
                f"{page}:{line}: `copyhead {' '.join(argv)}` does not parse: "
                f"{capsys.readouterr().err.strip().splitlines()[-1]}"
            )


@pytest.mark.parametrize("page, line, code", PYTHON, ids=[f"{p}:{n}" for p, n, _ in PYTHON])
def test_python_blocks_run(page, line, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    exec(compile(code, f"{page}:{line}", "exec"), {"__name__": "__docs__"})
    capsys.readouterr()


def test_readme_fits_in_150_lines():
    """The README is the front page (what, install, the main job, verdicts, posterior commands,
    links): the rest belongs in docs/."""
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= 150, f"README.md has {n} lines"
