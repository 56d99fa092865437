"""The one error a probe raises for input it cannot work with (exit 2, located where known)."""

from __future__ import annotations

from capplan.core.errors import UserError


class ProbeError(UserError):
    """A plan the probe cannot ask about, or a budget or flag it cannot honour."""

    code = "PROBE"
