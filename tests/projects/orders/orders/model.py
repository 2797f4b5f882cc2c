from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Line:
    sku: str
    price: int  # cents
    qty: int = 1


@dataclass
class Order:
    customer: str
    lines: list[Line] = field(default_factory=list)

    def add(self, sku: str, price: int, qty: int = 1) -> Order:
        self.lines.append(Line(sku, price, qty))
        return self
