"""A travel-booking desk: a small flight schedule, bookings and refunds in memory.

Public methods are the agent's tools; public attributes are the final state for grading.
"""

from __future__ import annotations

from typing import Any


class TravelDesk:
    def __init__(self) -> None:
        self.flights: dict[str, dict[str, Any]] = {
            "TD101": {"origin": "AMS", "destination": "LIS", "date": "2026-03-02", "seats": 4, "fare": 120.0},
            "TD102": {"origin": "AMS", "destination": "LIS", "date": "2026-03-03", "seats": 0, "fare": 95.0},
            "TD201": {"origin": "LIS", "destination": "AMS", "date": "2026-03-09", "seats": 9, "fare": 135.0},
            "TD301": {"origin": "AMS", "destination": "BCN", "date": "2026-03-02", "seats": 2, "fare": 88.0},
        }
        self.bookings: dict[str, dict[str, Any]] = {
            "BK-7": {"flight_id": "TD301", "passenger": "Ines Duarte", "status": "confirmed", "paid": 88.0},
        }
        self.refunds: list[dict[str, Any]] = []

    def search_flights(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        return [
            {"flight_id": fid, **f}
            for fid, f in sorted(self.flights.items())
            if f["origin"] == origin and f["destination"] == destination and f["date"] == date
        ]

    def book_flight(self, flight_id: str, passenger: str) -> dict[str, Any]:
        flight = self.flights.get(flight_id)
        if flight is None:
            raise KeyError(f"no flight {flight_id}")
        if flight["seats"] <= 0:
            raise ValueError(f"flight {flight_id} is full")
        flight["seats"] -= 1
        booking_id = f"BK-{len(self.bookings) + 100}"
        self.bookings[booking_id] = {"flight_id": flight_id, "passenger": passenger, "status": "confirmed",
                                     "paid": flight["fare"]}
        return {"booking_id": booking_id, "fare": flight["fare"]}

    def get_booking(self, booking_id: str) -> dict[str, Any]:
        if booking_id not in self.bookings:
            raise KeyError(f"no booking {booking_id}")
        return {"booking_id": booking_id, **self.bookings[booking_id]}

    def cancel_booking(self, booking_id: str, refund: bool) -> dict[str, Any]:
        booking = self.bookings.get(booking_id)
        if booking is None:
            raise KeyError(f"no booking {booking_id}")
        if booking["status"] == "cancelled":
            raise ValueError(f"booking {booking_id} is already cancelled")
        booking["status"] = "cancelled"
        self.flights[booking["flight_id"]]["seats"] += 1
        if refund:
            self.refunds.append({"booking_id": booking_id, "amount": booking["paid"]})
        return {"booking_id": booking_id, "status": "cancelled", "refunded": booking["paid"] if refund else 0.0}
