"""An inventory and invoice desk: stock levels, customers and invoices in memory.

Every public method is a tool the agent may call; the public attributes are the final state
the graders read. A fresh instance per trial, so no trial sees another's invoices.
"""

from __future__ import annotations

from typing import Any


class InventoryDesk:
    def __init__(self, low_stock_threshold: int = 5) -> None:
        self.items: dict[str, dict[str, Any]] = {
            "SKU-100": {"name": "USB-C cable 1m", "qty": 40, "unit_price": 9.5},
            "SKU-200": {"name": "Laptop stand", "qty": 3, "unit_price": 34.0},
            "SKU-300": {"name": "Wireless mouse", "qty": 12, "unit_price": 21.0},
            "SKU-400": {"name": "27in monitor", "qty": 0, "unit_price": 219.0},
        }
        self.customers: dict[str, dict[str, Any]] = {
            "C-ACME": {"name": "ACME Corp", "discount_pct": 10},
            "C-BOLT": {"name": "Bolt Studio", "discount_pct": 0},
        }
        self.invoices: dict[str, dict[str, Any]] = {}
        self.stock_log: list[dict[str, Any]] = []
        self._threshold = low_stock_threshold

    def lookup_item(self, sku: str) -> dict[str, Any]:
        if sku not in self.items:
            raise KeyError(f"no item {sku}; known SKUs: {', '.join(sorted(self.items))}")
        return {"sku": sku, **self.items[sku]}

    def list_low_stock(self) -> list[dict[str, Any]]:
        return [{"sku": s, **i} for s, i in sorted(self.items.items()) if i["qty"] < self._threshold]

    def adjust_stock(self, sku: str, delta: int, reason: str) -> dict[str, Any]:
        item = self.items.get(sku)
        if item is None:
            raise KeyError(f"no item {sku}")
        if item["qty"] + delta < 0:
            raise ValueError(f"{sku} has {item['qty']} in stock; cannot remove {-delta}")
        item["qty"] += delta
        self.stock_log.append({"sku": sku, "delta": delta, "reason": reason})
        return {"sku": sku, "qty": item["qty"]}

    def create_invoice(self, customer_id: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
        customer = self.customers.get(customer_id)
        if customer is None:
            raise KeyError(f"no customer {customer_id}")
        total = 0.0
        for line in lines:
            item = self.items.get(line["sku"])
            if item is None:
                raise KeyError(f"no item {line['sku']}")
            if item["qty"] < line["qty"]:
                raise ValueError(f"only {item['qty']} of {line['sku']} in stock")
        for line in lines:
            self.items[line["sku"]]["qty"] -= line["qty"]
            total += self.items[line["sku"]]["unit_price"] * line["qty"]
        total = round(total * (100 - customer["discount_pct"]) / 100, 2)
        invoice_id = f"INV-{len(self.invoices) + 1:04d}"
        self.invoices[invoice_id] = {"customer_id": customer_id, "lines": lines, "total": total, "status": "open"}
        return {"invoice_id": invoice_id, "total": total}

    def void_invoice(self, invoice_id: str) -> dict[str, Any]:
        invoice = self.invoices.get(invoice_id)
        if invoice is None:
            raise KeyError(f"no invoice {invoice_id}")
        if invoice["status"] == "void":
            return {"invoice_id": invoice_id, "status": "void"}
        for line in invoice["lines"]:
            self.items[line["sku"]]["qty"] += line["qty"]
        invoice["status"] = "void"
        return {"invoice_id": invoice_id, "status": "void"}
