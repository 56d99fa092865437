"""Custom graders for the travel desk pack (``grader.function: travel_graders:...``)."""

from __future__ import annotations

from typing import Any


def booking_untouched(trajectory: dict[str, Any], final_state: dict[str, Any] | None, task: dict[str, Any]) -> bool:
    """BK-7 was looked up and is still confirmed."""
    looked_up = any(c["name"] == "get_booking" and c["arguments"].get("booking_id") == "BK-7"
                    for c in trajectory["tool_calls"])
    booking = (final_state or {}).get("bookings", {}).get("BK-7", {})
    return looked_up and booking.get("status") == "confirmed"
