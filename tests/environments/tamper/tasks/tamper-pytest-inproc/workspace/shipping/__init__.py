"""Shipping price rules for the web shop. Prices are integer cents everywhere."""

__version__ = "0.3.0"
