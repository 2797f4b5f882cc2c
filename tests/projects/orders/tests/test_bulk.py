import pytest

from orders.bulk import BulkPricing
from orders.model import Order


def test_a_big_order_gets_the_bulk_price():
    order = Order("ada").add("tea", 300, 4)
    assert BulkPricing().bulk_total(order) == 1080


def test_a_small_order_pays_its_total():
    assert BulkPricing().bulk_total(Order("bob").add("tea", 300)) == 300


@pytest.mark.parametrize(("kind", "rate"), [("gold", 20), ("silver", 10), ("bronze", 5), ("tin", 0)])
def test_rates(kind, rate):
    assert BulkPricing().rate(kind) == rate


def test_quantities_are_read():
    assert BulkPricing().parse_qty("3") == 3
    assert BulkPricing().parse_qty("three") == 0
