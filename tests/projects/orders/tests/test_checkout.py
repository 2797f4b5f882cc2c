from unittest import mock

from orders.checkout import checkout
from orders.model import Order
from orders.pricing import Pricing


def test_checkout_mails_a_receipt():
    mailer = mock.Mock()
    amount = checkout(Order("ada").add("tea", 300, 2), Pricing(), mailer)
    assert amount == 720
    mailer.send.assert_called_once()


def test_nothing_to_pay_sends_nothing():
    mailer = mock.Mock()
    assert checkout(Order("bob"), Pricing(), mailer) == 0
    mailer.send.assert_not_called()
