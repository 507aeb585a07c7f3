"""The front server for a Ray cluster: the usual app, with sessions placed on host actors.

Nothing in the server knows about Ray: its session manager takes an ``env_factory`` and this
module passes one that makes :class:`~omnienv.ray.remote.RemoteEnv` sessions, so ``/ws``, HTTP
sessions, MCP and every dialect router mounted on the app route to actors unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from omnienv.app import create_app
from omnienv.core.env import EnvironmentBase
from omnienv.core.registry import load_environment
from omnienv.ray.cluster import connect, disconnect
from omnienv.ray.placement import HostPool
from omnienv.ray.remote import remote_env_factory
from omnienv.server import OmniApp, ServerConfig

__all__ = ["create_ray_app", "ray_app", "serve_on_ray"]


def create_ray_app(
    env: type[EnvironmentBase] | str,
    hosts: HostPool,
    config: ServerConfig | None = None,
    **overrides: Any,
) -> OmniApp:
    """An app serving ``env`` whose sessions live on ``hosts`` (the caller shuts them down)."""
    env_class = load_environment(env) if isinstance(env, str) else env
    if env_class is not hosts.env_class:
        raise ValueError(f"the host pool serves {hosts.env_class.name}, not {env_class.name}")
    app = create_app(env_class, config, env_factory=remote_env_factory(hosts), **overrides)
    app.state.hosts = hosts
    return app


@contextmanager
def ray_app(
    env: type[EnvironmentBase] | str,
    *,
    actors: int | None = None,
    actor_options: Mapping[str, Any] | None = None,
    config: ServerConfig | None = None,
    direct: bool = True,
    **overrides: Any,
) -> Iterator[OmniApp]:
    """Start host actors for ``env`` on the connected cluster, yield the app, stop them after.
    ``direct=False`` calls them through Ray instead of their own connections (:class:`HostPool`)."""
    with HostPool(env, actors, options=actor_options, direct=direct) as hosts:
        yield create_ray_app(env, hosts, config, **overrides)


def serve_on_ray(
    env: type[EnvironmentBase] | str,
    config: ServerConfig,
    host: str,
    port: int,
    *,
    address: str | None = None,
    actors: int | None = None,
    actor_options: Mapping[str, Any] | None = None,
    direct: bool = True,
    announce: Callable[[str], object] = print,
    **uvicorn_options: Any,
) -> None:
    """``omnienv serve ENV --ray ADDRESS``: join (or start) Ray, start the host actors, say where
    each one runs, serve until interrupted, then stop the actors and leave the cluster. A cluster
    that cannot be joined is a :class:`ConnectionError` naming the fix. A loopback ``ADDRESS``
    (``127.0.0.1:6379``) keeps this driver on 127.0.0.1 (:func:`omnienv.ray.connect`)."""
    import ray

    from omnienv.server import serve

    try:
        connect(address)
    except ConnectionError as exc:
        raise ConnectionError(
            f"cannot join the Ray cluster at '{address}': {exc} Start one with `ray start --head` on this "
            "node, pass its address, or use --ray local for a private instance on this machine"
        ) from None
    try:
        with ray_app(env, actors=actors, actor_options=actor_options, config=config, direct=direct) as app:
            hosts: HostPool = app.state.hosts
            nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
            announce(
                f"sessions on {len(hosts.hosts)} Ray actor(s) in a cluster of {nodes} node(s); "
                f"each actor asks for {hosts.options}; calls go "
                + ("over each actor's own connection" if hosts.direct else "through Ray's actor calls")
            )
            for placed in hosts.hosts:
                announce(f"  {placed.where()}")
            serve(app, host, port, **uvicorn_options)
    finally:
        disconnect()
