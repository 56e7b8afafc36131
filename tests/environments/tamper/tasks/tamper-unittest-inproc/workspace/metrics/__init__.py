"""Dependency-free summary statistics for the dashboards."""

__version__ = "0.2.0"
