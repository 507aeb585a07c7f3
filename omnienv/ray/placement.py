"""Actors across the cluster, and which one gets the next session: the least loaded live one.

The front process is the only one placing sessions on its actors, so it counts their sessions
itself: placing costs no round trip. An actor that dies is marked lost the first time a call to
it fails; it gets no new sessions, the sessions it held fail with ``WorkerLostError``, and a
replacement actor is started at once so that the pool's capacity comes back. A replacement gets
sessions from the moment it answers (Ray schedules it wherever the cluster has room; it waits
there for room if there is none). The front never waits for it on the hot path.

Host actors ask Ray to ``SPREAD`` them over the cluster's nodes (Ray's default packs actors onto
the node it is called from): losing one node then costs only that node's share of the sessions.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import RayError

from omnienv.core.env import EnvironmentBase
from omnienv.core.errors import WorkerLostError
from omnienv.core.registry import load_environment
from omnienv.ray.channel import ChannelAddress
from omnienv.ray.host import host_class, is_inline

__all__ = ["Host", "HostPool", "actor_options"]

logger = logging.getLogger("omnienv.ray")

_STOP_TIMEOUT = 10.0
"""How long a pool shutting down waits for its actors to close their environments and exit
before it kills them."""

_START_FAILURES = 3
"""Replacements that die before answering, in a row, after which the pool stops replacing: an
actor that cannot start (its environment's module fails to import there, say) would otherwise be
restarted forever."""


@dataclass(eq=False)
class Host:
    """One actor and the bookkeeping the front process keeps about it."""

    index: int
    actor: Any
    """The ``ray.actor.ActorHandle`` of an ``EnvHost`` or ``InlineEnvHost`` (Any: Ray types only
    ``@ray.method`` calls)."""
    sessions: int = 0
    alive: bool = True
    death: str = field(default="")
    node_id: str = ""
    """The Ray node the actor runs on (hex id), known once it answered."""
    node_ip: str = ""
    pid: int = 0
    channel: ChannelAddress | None = field(default=None, repr=False)
    """Where the front sends this actor's batches directly (:mod:`omnienv.ray.channel`); None:
    through Ray."""
    batcher: Any = field(default=None, repr=False)
    """Coalesces this actor's calls per event-loop turn (set by :mod:`omnienv.ray.remote`)."""

    def learn(self, info: Mapping[str, Any]) -> None:
        """Record where the actor runs, from its :meth:`EnvHost.info` answer."""
        self.node_id = str(info.get("node_id") or "")
        self.node_ip = str(info.get("node_ip") or "")
        self.pid = int(info.get("pid") or 0)
        self.channel = info.get("channel")

    def disconnect(self) -> None:
        """Close the front's direct connection to the actor, if one is open."""
        if self.batcher is not None:
            self.batcher.close()

    def where(self) -> str:
        """``actor 0: node 1a2b3c4d5e6f (10.0.0.2), pid 4242`` (for operators' logs)."""
        node = f"node {self.node_id[:12]} ({self.node_ip})" if self.node_id else "node unknown"
        return f"actor {self.index}: {node}, pid {self.pid}"


def actor_options(env_class: type[EnvironmentBase], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Resource requests for one host actor: ``num_cpus=1`` unless the environment class (a
    ``ray_options`` class attribute, e.g. ``{"num_cpus": 2, "memory": 2 << 30}`` for a desktop)
    or the caller says otherwise; the caller wins.

    The defaults also spread the actors over the nodes (``scheduling_strategy="SPREAD"``) and
    turn off Ray's per-task event records (``enable_task_events=False``): a host actor runs a call
    per batch of steps, thousands a second, and recording each one for Ray's dashboard costs the
    GCS and both processes about a tenth of the call. An async host takes any number of calls at
    once (``max_concurrency``); an inline one (:class:`~omnienv.ray.host.InlineEnvHost`) one at a
    time, its calls never wait on anything.
    """
    merged: dict[str, Any] = {
        "num_cpus": 1,
        "max_concurrency": 1 if is_inline(env_class) else 10_000,
        "scheduling_strategy": "SPREAD",
        "enable_task_events": False,
    }
    merged.update(getattr(env_class, "ray_options", None) or {})
    merged.update(options or {})
    return merged


class HostPool:
    """``actors`` host actors for one environment class, spread by Ray across the cluster.

    ``actors=None`` starts one per CPU the cluster has (divided by the per-actor ``num_cpus``).
    ``options`` are ``ray.remote`` actor options (``num_cpus``, ``num_gpus``, ``memory``,
    ``resources``, ``scheduling_strategy``...). ``replace=False`` leaves a dead actor's place
    empty (the pool shrinks). ``direct=True`` has each actor open a connection of its own for the
    front's batches (:mod:`omnienv.ray.channel`), far cheaper per call than Ray's; a front server
    wants it, :class:`~omnienv.ray.EnvPool` calls through Ray. Call :meth:`shutdown` when done.
    """

    def __init__(
        self,
        env: type[EnvironmentBase] | str,
        actors: int | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        threads: int = 0,
        ready_timeout: float = 120.0,
        replace: bool = True,
        direct: bool = True,
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
        asked, cpus = actors * float(self.options.get("num_cpus") or 0), float(ray.cluster_resources().get("CPU", 0))
        if asked > cpus:  # said now, not after the wait: a cluster that cannot grow never places them
            logger.warning(
                "%d Ray actors ask for %g CPUs and the cluster has %g: the ones that do not fit wait up to %g s "
                "for nodes; lower --ray-actors or --ray-cpus (each actor's share)",
                actors, asked, cpus, ready_timeout,
            )  # fmt: skip
        self.replace = replace
        self.direct = direct
        self.closed = False
        self.replaced = 0
        """Replacement actors started so far (for operators and tests)."""
        self.starting: list[tuple[Any, Host]] = []
        """Replacements started but not answering yet: each with the reference of its first answer."""
        self._start_failures = 0
        self._spawned = 0
        self._threads = threads
        self._remote_class = ray.remote(host_class(self.env_class)).options(**self.options)
        self.hosts: list[Host] = []
        for _ in range(actors):
            self.hosts.append(self._spawn())
        self.wait_ready(ready_timeout)

    def _spawn(self) -> Host:
        self._spawned += 1
        return Host(self._spawned - 1, self._remote_class.remote(self.env_class, self._threads))

    def wait_ready(self, timeout: float) -> None:
        """Block until every actor answers; raise if one cannot be scheduled in time."""
        pending = {host.actor.info.remote(self.direct): host for host in self.hosts}
        deadline = time.monotonic() + timeout
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self.shutdown()
                raise TimeoutError(
                    f"{len(pending)} of {len(self.hosts)} Ray actors did not start within {timeout:g} s: "
                    f"the cluster lacks the resources they ask for ({self.options}); lower --ray-actors "
                    "or the per-actor requests (--ray-cpus, the environment's ray_options), or add nodes"
                )
            done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=min(left, 1.0))
            for ref in done:
                pending.pop(ref).learn(ray.get(ref))

    @property
    def live(self) -> list[Host]:
        self.admit()
        return [host for host in self.hosts if host.alive]

    @property
    def sessions(self) -> int:
        return sum(host.sessions for host in self.hosts if host.alive)

    def place(self) -> Host:
        """The live host with the fewest sessions, charged with one more."""
        live = self.live
        if not live:
            starting = f"; {len(self.starting)} replacement(s) are starting" if self.starting else ""
            raise WorkerLostError(
                f"every Ray actor hosting {self.env_class.name} has died{starting}: retry later, or restart "
                "the server or the pool"
            )
        host = min(live, key=lambda h: h.sessions)
        host.sessions += 1
        return host

    def release(self, host: Host) -> None:
        host.sessions = max(0, host.sessions - 1)

    def lost(self, host: Host, reason: object) -> WorkerLostError:
        """Mark ``host`` dead (once), start its replacement, and return the error its sessions
        fail with. The actor is killed too: one whose connection broke while Ray still thought it
        alive must not live on, unused, beside its replacement."""
        if host.alive:
            host.alive = False
            host.death = str(reason).strip().splitlines()[0] if str(reason).strip() else type(reason).__name__
            host.disconnect()
            _kill(host.actor)
            if self.replace and not self.closed:
                self._start_replacement()
                logger.warning("%s died (%s); its sessions fail, a replacement is starting", host.where(), host.death)
        return WorkerLostError(
            f"the Ray actor hosting this session died ({host.death}); the episode is void (flagged as "
            "failed): call reset() to continue on a live actor"
        )

    # -- replacements -------------------------------------------------------------------------

    def _start_replacement(self) -> None:
        host = self._spawn()
        answer = host.actor.info.remote(self.direct)
        self.starting.append((answer, host))
        self.replaced += 1
        try:  # on a front server, admit it (or replace it in turn) as soon as it answers or dies
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a trainer's pool: admitted on its next placement
            return
        answer.future().add_done_callback(lambda _: _call_soon(loop, self.admit))

    def admit(self) -> None:
        """Let the replacements that answered take sessions (costs nothing when none is starting).

        A replacement that died before answering is replaced in turn, up to a few in a row.
        """
        if not self.starting:
            return
        refs = [ref for ref, _ in self.starting]
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        if not done:
            return
        answered, waiting, retries = set(done), [], 0
        for ref, host in self.starting:
            if ref not in answered:
                waiting.append((ref, host))
                continue
            try:
                host.learn(ray.get(ref))
            except RayError as exc:  # it died on the way, or could not start there at all
                self._start_failures += 1
                retry = self._start_failures < _START_FAILURES
                retries += retry
                logger.warning(
                    "a replacement Ray actor died before answering (%s); %s",
                    str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                    "starting another" if retry else f"{_START_FAILURES} in a row: no more replacements",
                )
                continue
            self._start_failures = 0
            self.hosts.append(host)
            logger.warning("replacement %s takes sessions", host.where())
        self.starting = waiting
        for _ in range(retries if self.replace and not self.closed else 0):
            self._start_replacement()

    async def wait_live(self, timeout: float) -> None:
        """Wait (without blocking the event loop) until a replacement answers, or ``timeout``."""
        if not self.starting:
            return
        futures = [asyncio.wrap_future(ref.future()) for ref, _ in self.starting]
        try:
            await asyncio.wait(futures, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in futures:
                future.cancel()
        self.admit()

    def wait_live_blocking(self, timeout: float) -> None:
        """:meth:`wait_live` for callers without an event loop (:class:`EnvPool`)."""
        if self.starting:
            ray.wait([ref for ref, _ in self.starting], num_returns=1, timeout=timeout)
            self.admit()

    # -- the end ------------------------------------------------------------------------------

    def shutdown(self, timeout: float = _STOP_TIMEOUT) -> None:
        """Stop every actor of the pool: each closes the environments it still holds and exits,
        its process's exit handlers included, so that what the environments started (kernels,
        sandboxes and their folders, mounts and cgroups) goes with them; ``ray.kill`` would end
        the process at once and leave all that behind. The actors that have not exited within
        ``timeout`` seconds, and replacements still starting, are killed."""
        self.closed = True
        hosts = [*self.hosts, *(host for _, host in self.starting)]
        self.starting = []
        running = [host for host in hosts if host.alive and host.pid]  # the ones that answered
        for host in hosts:
            if host.alive:
                host.alive = False
                host.death = "the pool was shut down"
            host.disconnect()
        exited = _stop(running, timeout, wait=not is_inline(self.env_class))
        for host in hosts:
            if host not in exited:
                _kill(host.actor)

    def __enter__(self) -> HostPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Any) -> None:
    """Hand ``callback`` to ``loop`` from Ray's thread, unless the loop has closed since."""
    try:
        loop.call_soon_threadsafe(callback)
    except RuntimeError:
        pass


def _stop(hosts: list[Host], timeout: float, *, wait: bool) -> set[Host]:
    """Have ``hosts`` close their environments, then exit (Ray's graceful ``__ray_terminate__``,
    which runs the process's exit handlers); answers the ones that exited within ``timeout``.
    ``wait``: also wait for their processes on this node to end (see below).

    Two steps, each waited for: an async actor may start its calls in any order, and one told
    to exit while it has not begun closing would exit with its environments still open."""
    if not hosts:
        return set()
    deadline = time.monotonic() + timeout
    closing = {host.actor.stop.remote(timeout): host for host in hosts}  # and exit within timeout
    closed, _ = ray.wait(list(closing), num_returns=len(closing), timeout=timeout)
    exiting = {closing[ref].actor.__ray_terminate__.remote(): closing[ref] for ref in closed}
    if not exiting:
        return set()
    left = max(0.0, deadline - time.monotonic())
    done, _ = ray.wait(list(exiting), num_returns=len(exiting), timeout=left)  # an exit answers an error
    exited = {exiting[ref] for ref in done}
    if not wait:
        return exited
    # Ray answers the exit before the process has run its exit handlers (a pool of kernels
    # deleting their sandboxes): a caller that stops Ray next (omnienv serve --ray local) would
    # kill it half done. Processes on this node can be waited for (about half a second each, in
    # parallel); on other nodes they finish on their own, or end themselves when ``timeout`` is
    # up (EnvHost.stop). An inline environment (a game like Wordle) starts nothing that needs
    # it, and its pool does not wait.
    here = ray.get_runtime_context().get_node_id()
    for host in exited:
        if host.node_id == here:
            _wait_exit(host.pid, deadline - time.monotonic())
    return exited


def _wait_exit(pid: int, timeout: float) -> None:
    """Wait up to ``timeout`` seconds for process ``pid`` (of this machine) to end."""
    if timeout <= 0:
        return
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfd here (not Linux, or an old kernel): poll
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _exists(pid):
            time.sleep(0.01)
        return
    try:
        select.select([fd], [], [], timeout)  # readable once the process has ended
    finally:
        os.close(fd)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: it exists
        pass
    return True


def _kill(actor: Any) -> None:
    try:
        ray.kill(actor)
    except Exception:  # already gone
        pass
