"""One private Ray instance for the Ray tests: 2 CPUs, small object store, no dashboard, loopback only."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator

import psutil
import pytest

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'omnienv[ray]'")

from omnienv.ray import HostPool, connect, disconnect  # noqa: E402
from omnienv.ray.placement import Host  # noqa: E402
from tests.polling import eventually  # noqa: E402

ACTOR = {"num_cpus": 0.5}
"""Four host actors fit the 2-CPU test instance."""


@pytest.fixture(scope="package")  # started once: each start costs seconds of both CPUs
def ray_local() -> Iterator[None]:
    os.environ.pop("RAY_ADDRESS", None)
    temp_dir = tempfile.mkdtemp(prefix="omr-")  # Ray's socket paths must stay short
    connect(None, num_cpus=2, object_store_memory=80 << 20, temp_dir=temp_dir)
    try:
        yield
    finally:
        disconnect()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture
def wordle_hosts(ray_local: None) -> Iterator[HostPool]:
    """Four fresh Wordle host actors, killed after the test."""
    with HostPool("wordle", 4, options=ACTOR) as hosts:
        yield hosts


def kill(host: Host) -> None:
    """``ray.kill``, then wait until the actor is really gone (the kill is asynchronous): Ray
    says it is dead, and its process has exited (Ray says so first, and until the process exits
    it still answers on its direct connection)."""
    ray.kill(host.actor)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ray.get(host.actor.info.remote(), timeout=10)
        except ray.exceptions.RayActorError:
            break
        except ray.exceptions.GetTimeoutError:
            continue
        time.sleep(0.01)
    else:
        raise AssertionError("the killed actor still answers after 30 s")
    eventually(lambda: not psutil.pid_exists(host.pid), 30, f"the killed actor's process {host.pid} exits")
