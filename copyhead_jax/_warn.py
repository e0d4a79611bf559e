"""The package's warning categories: what a computation finished with but a user must see (runs
that diverged or did not converge, chains that failed their health checks, a damaged checkpoint
set aside). Library code raises them with ``warnings.warn``; the ``copyhead`` command shows each
as one ``copyhead: warning: ...`` line on stderr. Progress notes go through ``logging``
(``logging.getLogger(__name__)``), which the command shows on stderr as well."""

from __future__ import annotations

__all__ = ["CopyheadWarning", "RunHealthWarning"]


class CopyheadWarning(UserWarning):
    """Base of the package's warnings (filter them all with this class)."""


class RunHealthWarning(CopyheadWarning):
    """Runs that diverged, fits that did not converge, or chains past the health thresholds: the
    result keeps them, flagged (``diverged``, ``converged``, ``flagged``) and out of the means."""
