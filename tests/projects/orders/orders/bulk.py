"""Bulk prices: the code of the refactors a held-out reviewer wrote (#46), where a decision
tests a local bound from a call, a generator expression is handed a helper, and an
``elif`` chain names rates."""

from __future__ import annotations

from orders.model import Line, Order

BULK_THRESHOLD = 1000


class BulkPricing:
    def _line(self, line: Line) -> int:
        return line.price * line.qty

    def bulk_total(self, order: Order) -> int:
        total = sum(self._line(line) for line in order.lines)
        if total > BULK_THRESHOLD:
            return total * 90 // 100
        return total

    def rate(self, kind: str) -> int:
        if kind == "gold":
            return 20
        elif kind == "silver":
            return 10
        elif kind == "bronze":
            return 5
        return 0

    def parse_qty(self, text: str) -> int:
        def isanumber(value):
            try:
                int(value)
                return True
            except ValueError:
                return False

        if isanumber(text):
            return int(text)
        return 0
