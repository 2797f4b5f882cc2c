from unittest import mock

from shop.payment import Gateway, checkout
from shop.pricing import Cart, Item


def test_checkout_with_mocked_gateway():
    cart = Cart()
    cart.add(Item("a", 10.0))
    gateway = mock.create_autospec(Gateway, instance=True)
    gateway.charge.return_value = "ok"
    assert checkout(cart, gateway) == "ok"


def test_checkout_empty_cart():
    assert checkout(Cart(), Gateway("127.0.0.1", 9)) == "nothing-to-pay"
