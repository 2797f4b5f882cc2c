from __future__ import annotations


def checkout(order, pricing, mailer):
    amount = pricing.total(order)
    if amount <= 0:
        return 0
    mailer.send(order.customer, pricing.receipt(order))
    return amount
