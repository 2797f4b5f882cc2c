import pytest

from shop.pricing import Cart, Item, discount, line_total, total


def test_total_with_discount():
    assert total([Item("a", 60.0, 2)]) == 136.8


def test_line_total_rejects_zero():
    with pytest.raises(ValueError):
        line_total(Item("a", 1.0, 0))


@pytest.mark.parametrize("amount", [50, 500, 5000])
def test_discount_tiers(amount):
    assert discount(amount) >= 0


def test_cart_names_generator():
    cart = Cart()
    cart.add(Item("x", 1.0))
    cart.add(Item("y", 2.0))
    assert list(cart.names()) == ["x", "y"]


def test_many_calls():
    for i in range(1000):
        line_total(Item("n", 1.0, 1))
