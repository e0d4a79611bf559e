"""polish.py: ``copyhead polish`` checks its output path before any work."""

import importlib

from copyhead_jax.cli import main
from tests.helpers import no_work, one_line_error

# the module (``copyhead_jax.fit.polish`` is the face's function of that name)
polish_mod = importlib.import_module("copyhead_jax.fit.polish")


def test_polish_checks_its_output_before_work(reduced, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(polish_mod, "polish_runs", no_work)
    (tmp_path / "file").write_text("")
    rc = main(["polish", str(reduced), "--out", str(tmp_path / "file" / "p.npz")])
    one_line_error(capsys, rc, "is not writable")
    rc = main(["polish", str(reduced), "--out", str(tmp_path / "p.txt")])
    one_line_error(capsys, rc, r"must end in \.npz")
