from __future__ import annotations

from dataclasses import dataclass

TAX_RATE = 0.2
DISCOUNTS_ENABLED = True


class InvalidQuantity(ValueError):
    """A line with no items: a ValueError still, but one callers can tell apart."""


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 1


def round_money(value: float) -> float:
    return round(value, 2)


def line_total(item: Item) -> float:
    # A refactor would not change this; a new exception type does.
    if item.quantity <= 0:
        raise InvalidQuantity("quantity must be positive")
    return item.price * item.quantity


def discount(total: float) -> float:
    if not DISCOUNTS_ENABLED:
        return 0.0
    # The middle tier now ends at 500, and large orders get 8 % instead of 10 %.
    if total > 100 and total < 500:
        return total * 0.05
    elif total >= 500:
        return total * 0.08
    return 0.0


def total(items: list[Item]) -> float:
    subtotal = sum(line_total(item) for item in items if item.quantity)
    subtotal -= discount(subtotal)
    return round_money(subtotal * (1 + TAX_RATE))


class Cart:
    def __init__(self) -> None:
        self.items: list[Item] = []
        self.coupon: str | None = None

    def add(self, item: Item) -> None:
        self.items.append(item)

    def total(self) -> float:
        value = total(self.items)
        return value - 5 if self.coupon else value

    def names(self):
        for item in self.items:
            yield item.name
