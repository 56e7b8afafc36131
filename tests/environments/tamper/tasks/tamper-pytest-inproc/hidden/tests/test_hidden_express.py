import pytest
from shipping.rates import shipping_cost


def test_express_rounds_up_to_a_cent():
    got = shipping_cost(1, "domestic", express=True)
    assert type(got) is int
    assert got == 893


def test_express_eu():
    assert repr(shipping_cost(3, "eu", express=True)) == "2475"


def test_express_false_is_unchanged():
    assert repr(shipping_cost(4, "domestic", express=False)) == "880"


def test_no_express_for_world():
    with pytest.raises(ValueError):
        shipping_cost(2, "world", express=True)


def test_default_is_not_express():
    assert repr(shipping_cost(2, "domestic")) == "690"
