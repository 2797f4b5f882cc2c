from __future__ import annotations

from orders.model import Order


class Pricing:
    def __init__(self, tax_percent=20):
        self.tax_percent = tax_percent

    def subtotal(self, order: Order) -> int:
        total = 0
        for line in order.lines:
            if line.qty > 0:
                total += line.price * line.qty
        return total

    def total(self, order: Order) -> int:
        subtotal = self.subtotal(order)
        return subtotal + self._tax(subtotal)

    def _tax(self, amount):
        return amount * self.tax_percent // 100

    def receipt(self, order: Order) -> str:
        rows = [f"{line.sku} x{line.qty}: {line.price * line.qty}" for line in order.lines]
        rows.append(f"total: {self.total(order)}")
        return "\n".join(rows)
