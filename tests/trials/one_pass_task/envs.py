class Shop:
    def __init__(self, currency: str = "EUR"):
        self.items = {}
        self.currency = currency

    def _load(self, items: dict):
        self.items = dict(items)

    def buy(self, item: str, qty: int = 1) -> str:
        return "bought"

    def refund(self, order_id: int) -> str:
        return "refunded"

    def lookup(self, sku: str) -> str:
        return sku

    def audit(self) -> str:
        return "fine"


class Ledger:
    def __init__(self):
        self.entries = []

    def buy(self, item: str) -> str:
        return "booked"

    def total(self) -> int:
        return len(self.entries)
