from orders.model import Order
from orders.pricing import Pricing


def order():
    return Order("ada").add("tea", 300, 2).add("cake", 450).add("free", 0, 0)


def test_subtotal_skips_empty_lines():
    assert Pricing().subtotal(order()) == 1050


def test_total_adds_tax():
    assert Pricing().total(order()) == 1260


def test_total_of_an_empty_order():
    assert Pricing().total(Order("bob")) == 0


def test_receipt_names_the_total():
    assert "total: 1260" in Pricing().receipt(order())
