"""Custom graders for the inventory desk pack (``grader.function: inventory_graders:...``)."""

from __future__ import annotations

from typing import Any


def every_invoice_void(trajectory: dict[str, Any], final_state: dict[str, Any] | None, task: dict[str, Any]) -> dict[str, Any]:
    """At least one invoice was created, and every invoice ended void."""
    invoices = (final_state or {}).get("invoices", {})
    open_ids = sorted(i for i, inv in invoices.items() if inv["status"] != "void")
    return {"passed": bool(invoices) and not open_ids, "detail": {"invoices": len(invoices), "open": open_ids}}
