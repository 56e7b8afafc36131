"""Benchmarks: each prints its figures beside the anchor it is compared with; the last line is JSON."""
