"""Joining a Ray cluster, or starting a private one on this machine, with quiet defaults.

``address`` follows ``ray.init``: ``"auto"`` joins the cluster this node belongs to (``ray start``
ran here), ``"host:port"`` or ``"ray://host:port"`` joins that one. ``None`` or ``"local"`` starts a
private single-node instance bound to 127.0.0.1, without dashboard or usage reporting, that
lives as long as this process: the right thing for a laptop and for tests.

Loopback stays loopback. Ray replaces a loopback address (``127.0.0.1``, ``localhost``) by the
machine's own network address, both for the node it runs and for the cluster it dials, unless
its single-machine switch is set; this module sets it for a private instance and for a cluster
joined at a loopback address, so that such a driver never binds or dials anything else.

Token authentication: Ray 2.60 turns it on for the instances ``ray.init`` starts. Unless this
process's environment names a token, a private instance gets a fresh one of its own, handed to
its processes by environment, instead of the one Ray would read from (or first write to)
``~/.ray/auth_token``. To join a ``ray start`` cluster that uses tokens, set ``RAY_AUTH_MODE=token``
and the cluster's token (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``)
in this process's environment: Ray sends a token to a cluster named by address only when told to.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from typing import Any

__all__ = ["LOCAL", "connect", "disconnect", "is_loopback_address"]

LOCAL = "local"
_OBJECT_STORE_MIN = 80 * 1024 * 1024
_SINGLE_MACHINE_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_TOKEN_HINT = (
    "set RAY_AUTH_MODE=token and the cluster's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token) "
    "in this process's environment."
)
_made_dirs: list[str] = []
"""Temp dirs made for private instances, removed (logs and all) when they stop."""


def connect(
    address: str | None = None,
    *,
    num_cpus: float | None = None,
    object_store_memory: int | None = None,
    temp_dir: str | None = None,
    log_to_driver: bool = False,
    **init_options: Any,
) -> None:
    """Make this process a Ray driver; a no-op when it already is one.

    A private instance (``None``, ``"local"``) and a cluster at a loopback address keep this
    driver on 127.0.0.1. A cluster that cannot be joined is a :class:`ConnectionError`, which
    names the token variables when this process has not turned token mode on."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray

    if ray.is_initialized():
        return
    options: dict[str, Any] = {"log_to_driver": log_to_driver, "configure_logging": False, **init_options}
    if address in (None, "", LOCAL):
        os.environ.pop("RAY_ADDRESS", None)  # never join a cluster named by the environment by accident
        _loopback_only()
        _own_token()
        options.update(
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            # Ray's unix sockets live under the temp dir: keep its path short (108-byte socket paths).
            _temp_dir=temp_dir or _new_temp_dir(),
        )
        if num_cpus is not None:
            options["num_cpus"] = num_cpus
        if object_store_memory is not None:
            options["object_store_memory"] = max(object_store_memory, _OBJECT_STORE_MIN)
        ray.init(**options)
        return
    if is_loopback_address(address):
        _loopback_only()
        options.setdefault("_node_ip_address", "127.0.0.1")
    try:
        ray.init(address=address, **options)
    except ray.exceptions.AuthenticationError as exc:  # token mode, but no token here
        raise ConnectionError(f"{exc}: {_TOKEN_HINT}") from None
    except ConnectionError as exc:  # a token refused looks the same as no cluster
        if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
            raise
        raise ConnectionError(f"{exc} If the cluster uses token authentication, {_TOKEN_HINT}") from None


def is_loopback_address(address: str | None) -> bool:
    """Whether a cluster address (``host:port``) names this machine's loopback as Ray sees it
    (``127.0.0.1``, ``localhost``, ``[::1]``): the addresses Ray would rewrite to the network one.
    ``auto`` and Ray client addresses (``ray://``) are not: Ray reads or dials those itself."""
    if not address or address in ("auto", LOCAL) or "://" in address:
        return False
    return address.rsplit(":", 1)[0].strip("[]") in _LOOPBACK_HOSTS


def _own_token() -> None:
    """Give a private instance a token of its own, unless this process already names one: Ray
    turns token authentication on for instances it starts, and would otherwise read the token
    from ``~/.ray/auth_token``, writing one there first when there is none."""
    if os.environ.get("RAY_AUTH_MODE", "token").lower() != "token":
        return
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


def _loopback_only() -> None:
    """Keep a private instance on 127.0.0.1. Ray swaps a loopback ``_node_ip_address`` for the
    machine's reachable address unless its single-machine switch is off; that switch is read from
    the environment by every Ray process started from here, and from this constant in this one."""
    os.environ[_SINGLE_MACHINE_SWITCH] = "0"
    try:
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    except (ImportError, AttributeError):  # another Ray layout: it falls back to the machine's address
        pass


def disconnect() -> None:
    """Leave the cluster (and stop the private instance, if this process started one)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    while _made_dirs:
        shutil.rmtree(_made_dirs.pop(), ignore_errors=True)


def _new_temp_dir() -> str:
    path = tempfile.mkdtemp(prefix="omnienv-ray-")
    _made_dirs.append(path)
    return path
