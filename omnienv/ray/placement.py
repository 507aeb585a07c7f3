"""Actors across the cluster, and which one gets the next session: the least loaded live one.

The front process is the only one placing sessions on its actors, so it counts their sessions
itself: placing costs no round trip. An actor that dies is marked lost the first time a call to
it fails; it gets no new sessions, and the sessions it held fail with ``WorkerLostError``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import ray

from omnienv.core.env import EnvironmentBase
from omnienv.core.errors import WorkerLostError
from omnienv.core.registry import load_environment
from omnienv.ray.host import EnvHost

__all__ = ["Host", "HostPool", "actor_options"]


@dataclass(eq=False)
class Host:
    """One actor and the bookkeeping the front process keeps about it."""

    index: int
    actor: Any
    """The ``ray.actor.ActorHandle`` of an ``EnvHost`` (Any: Ray types only ``@ray.method`` calls)."""
    sessions: int = 0
    alive: bool = True
    death: str = field(default="")
    batcher: Any = field(default=None, repr=False)
    """Coalesces this actor's calls per event-loop turn (set by :mod:`omnienv.ray.remote`)."""


def actor_options(env_class: type[EnvironmentBase], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Resource requests for one host actor: ``num_cpus=1`` unless the environment class (a
    ``ray_options`` class attribute, e.g. ``{"num_cpus": 2, "memory": 2 << 30}`` for a desktop)
    or the caller says otherwise; the caller wins."""
    merged: dict[str, Any] = {"num_cpus": 1, "max_concurrency": 10_000}
    merged.update(getattr(env_class, "ray_options", None) or {})
    merged.update(options or {})
    return merged


class HostPool:
    """``actors`` host actors for one environment class, spread by Ray across the cluster.

    ``actors=None`` starts one per CPU the cluster has (divided by the per-actor ``num_cpus``).
    ``options`` are ``ray.remote`` actor options (``num_cpus``, ``num_gpus``, ``memory``,
    ``resources``, ``scheduling_strategy``...). Call :meth:`shutdown` when done.
    """

    def __init__(
        self,
        env: type[EnvironmentBase] | str,
        actors: int | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        threads: int = 0,
        ready_timeout: float = 120.0,
    ) -> None:
        if not ray.is_initialized():
            raise RuntimeError("Ray is not running here: call omnienv.ray.connect() (or ray.init) first")
        self.env_class = load_environment(env) if isinstance(env, str) else env
        self.options = actor_options(self.env_class, options)
        if actors is None:
            cpus = float(ray.cluster_resources().get("CPU", 1))
            per_actor = float(self.options.get("num_cpus") or 0) or 1.0
            actors = max(1, int(cpus // per_actor))
        if actors < 1:
            raise ValueError("a HostPool needs at least one actor")
        remote_class = ray.remote(EnvHost).options(**self.options)
        self.hosts = [Host(i, remote_class.remote(self.env_class, threads)) for i in range(actors)]
        self.wait_ready(ready_timeout)

    def wait_ready(self, timeout: float) -> None:
        """Block until every actor answers; raise if one cannot be scheduled in time."""
        pending = {host.actor.info.remote(): host for host in self.hosts}
        deadline = time.monotonic() + timeout
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self.shutdown()
                raise TimeoutError(
                    f"{len(pending)} of {len(self.hosts)} Ray actors did not start within {timeout:g} s: "
                    f"the cluster lacks the resources they ask for ({self.options}); lower --ray-actors "
                    "or the per-actor requests, or add nodes"
                )
            done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=min(left, 1.0))
            for ref in done:
                ray.get(ref)
                pending.pop(ref)

    @property
    def live(self) -> list[Host]:
        return [host for host in self.hosts if host.alive]

    @property
    def sessions(self) -> int:
        return sum(host.sessions for host in self.hosts if host.alive)

    def place(self) -> Host:
        """The live host with the fewest sessions, charged with one more."""
        live = self.live
        if not live:
            raise WorkerLostError(
                f"every Ray actor hosting {self.env_class.name} has died; restart the server or the pool"
            )
        host = min(live, key=lambda h: h.sessions)
        host.sessions += 1
        return host

    def release(self, host: Host) -> None:
        host.sessions = max(0, host.sessions - 1)

    def lost(self, host: Host, reason: object) -> WorkerLostError:
        """Mark ``host`` dead (once) and return the error its sessions fail with."""
        if host.alive:
            host.alive = False
            host.death = str(reason).strip().splitlines()[0] if str(reason).strip() else type(reason).__name__
        return WorkerLostError(
            f"the Ray actor hosting this session died ({host.death}); the episode is void (flagged as "
            "failed): call reset() to continue on a live actor"
        )

    def shutdown(self) -> None:
        """Kill every actor of the pool (their sessions with them)."""
        for host in self.hosts:
            if host.alive:
                host.alive = False
                host.death = "the pool was shut down"
            try:
                ray.kill(host.actor)
            except Exception:  # already gone
                pass

    def __enter__(self) -> HostPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
