"""The CI's strictness: which skips mean a missing capability (they fail under HA_REQUIRE_CAPABILITIES=1)."""

from tests.conftest import missing_capability


def test_missing_installs_are_capabilities_and_a_gpu_is_not():
    for reason in (
        "bubblewrap (bwrap) is not installed: apt-get update && apt-get install -y bubblewrap",
        "no Docker engine at DOCKER_HOST (DockerException): source scripts/sandbox-deps.sh",
        "base image harness-adapters/debian-base:bookworm missing: source scripts/sandbox-deps.sh",
        "the harnesses are not installed in /x/.harnesses: run scripts/harness-deps.sh",
        "no local sandbox here: bubblewrap is missing",
    ):
        assert missing_capability(reason), reason
    for reason in (
        "needs a CUDA GPU",
        "only on a CUDA device",
        "got empty parameter set for (task_id, harness, variant)",  # no known false positives: fine
    ):
        assert not missing_capability(reason), reason
