"""Entry points for ``ray job submit`` (and for running on one machine): thin, config-driven."""
