"""The real-harness guard fixture (standalone guard, scripted upstream) for the rollout tests."""

from tests.environments.harnesses.conftest import guard  # noqa: F401
