"""What the ``copyhead`` command shows on stderr beside its progress bars: each of the package's
warnings as one ``copyhead: warning: ...`` line, and its log records (progress notes) as
``[transition HH:MM:SS] ...`` lines, so that stdout holds only the command's output (pure JSON
under ``--json``). Library code only raises (``warnings.warn``) and logs
(``logging.getLogger(__name__)``); this is the one place that prints them."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import warnings

__all__ = ["console"]


class _Lines(logging.Formatter):
    """A progress note as ``[AREA HH:MM:SS] message`` (AREA: the package folder that logged
    it), a warning as ``copyhead: warning: message``, an error as its message."""

    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.levelno >= logging.ERROR:
            return msg
        if record.levelno >= logging.WARNING:
            return f"copyhead: warning: {msg}"
        area = (record.name.split(".") + ["copyhead"])[1]
        return f"[{area} {time.strftime('%H:%M:%S', time.localtime(record.created))}] {msg}"


def _one_line(show):
    """``warnings.showwarning`` that prints the package's warnings as ``copyhead: warning:
    ...`` and hands any other to ``show`` (Python's own format, with the source line)."""
    from .._warn import CopyheadWarning

    def one_line(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, CopyheadWarning):
            print(f"copyhead: warning: {message}", file=sys.stderr if file is None else file)
        else:
            show(message, category, filename, lineno, file, line)

    return one_line


@contextlib.contextmanager
def console(level: int = logging.INFO):
    """Inside: the package's warnings (every occurrence) and its log records at ``level`` and
    above go to stderr, one line each; on exit the logging and warning state is restored."""
    from .._warn import CopyheadWarning

    logger = logging.getLogger("copyhead_jax")
    handler = logging.StreamHandler(sys.stderr)  # the stderr of this call (a test's capture)
    handler.setFormatter(_Lines())
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", CopyheadWarning)
            warnings.showwarning = _one_line(warnings.showwarning)
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
