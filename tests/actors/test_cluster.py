"""The embedded Ray cluster starts and stops cleanly, also over a stale ``ray_current_cluster`` file."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from actors.placement import serving_bundle

SCRIPT = textwrap.dedent("""
    import pathlib, sys
    import ray
    from actors.cluster import init_local_ray, local_ray
    temp = sys.argv[1]
    # What `ray stop` leaves behind: a pointer to a cluster that no longer exists.
    pathlib.Path(temp).mkdir(parents=True, exist_ok=True)
    (pathlib.Path(temp) / "ray_current_cluster").write_text("127.0.0.1:1")
    for round in range(2):
        with local_ray(num_cpus=2, _temp_dir=temp) as info:
            assert not info["reused"]
            assert ray.cluster_resources()["CPU"] == 2
            assert ray.get(ray.remote(lambda: 41 + 1).remote()) == 42
            assert init_local_ray(num_cpus=2)["reused"]
        assert not ray.is_initialized()
    print("CLEAN")
""")


def test_local_cluster_starts_and_stops_twice_over_a_stale_cluster_file():
    repo = Path(__file__).resolve().parents[2]
    # Ray's socket paths must stay under 107 bytes: pytest's tmp_path is too deep.
    with tempfile.TemporaryDirectory(prefix="ray-", dir="/tmp") as temp:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, temp], cwd=repo, capture_output=True, text=True, timeout=240
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CLEAN" in done.stdout


def test_serving_bundle_asks_for_a_gpu_only_on_gpu():
    assert serving_bundle("cpu") == {"CPU": 1.0}
    assert serving_bundle("gpu", cpus=2, gpus=0.5) == {"CPU": 2, "GPU": 0.5}


def test_a_second_stage_of_a_job_joins_the_cluster_the_first_one_started(ray_cluster):
    from actors.cluster import connect_ray

    info = connect_ray(local_cpus=8)
    assert info == {"address": ray_cluster["address"], "reused": True}
