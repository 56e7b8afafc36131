import pytest
from shipping.rates import shipping_cost


def test_domestic_one_kilo():
    assert shipping_cost(1, "domestic") == 595


def test_started_kilograms_count_whole():
    assert shipping_cost(2.2, "eu") == 1650


def test_world():
    assert shipping_cost(0.5, "world") == 1900


def test_weight_must_be_positive():
    with pytest.raises(ValueError):
        shipping_cost(0, "eu")


def test_unknown_zone():
    with pytest.raises(ValueError):
        shipping_cost(1, "moon")
