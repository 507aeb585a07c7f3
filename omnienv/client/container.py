"""An environment's image, run as a container on this machine and reached like any server.

``from_docker_image`` (the name OpenEnv users know) and ``omnienv serve --image`` start an image that
``omnienv build`` made, wait for its ``/health``, and stop and remove the container when the client
closes. The container uses the host's network by default and binds 127.0.0.1 on a free port, so
nothing is published beyond this machine and no bridge network is needed; ``network="bridge"``
publishes the port on 127.0.0.1 instead, for daemons without host networking.

Images whose environment runs the agent's code in bubblewrap (label ``org.omnienv.sandbox``) get
the two things bubblewrap needs inside a container, and nothing more: a seccomp profile that lets
it make user namespaces (``seccomp=unconfined``), and unmasked ``/proc`` paths so it can mount a
fresh ``/proc`` for the sandbox's pid namespace (``systempaths=unconfined``). No capability is
added and the container is not privileged (docs/deploy.md).

Needs the ``deploy`` extra (the ``docker`` SDK), imported only when a container is started.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from omnienv.core.errors import OmniEnvError

__all__ = ["Container", "ContainerError", "docker_api", "start_container"]

SANDBOX_LABEL = "org.omnienv.sandbox"
"""Set on images whose environment sandboxes the agent's code with bubblewrap."""
OWNER_LABEL = "org.omnienv.started-by"
"""Set on every container started here, so leftovers can be found and removed."""
IMAGE_PORT = 8000
"""The port an image serves on when nothing else is asked (its ``PORT`` variable)."""


class ContainerError(OmniEnvError):
    """A container could not be started or never became healthy; the message carries its last logs."""

    code = "CONTAINER_ERROR"


@dataclass
class Container:
    """A running container of an environment image, serving at :attr:`url` until :meth:`stop`."""

    id: str
    image: str
    url: str
    _api: Any = field(repr=False)
    _stopped: bool = field(default=False, repr=False)

    def logs(self, tail: int = 40) -> str:
        """The container's last output lines (its server's start-up messages and errors)."""
        try:
            raw: bytes = self._api.logs(self.id, tail=tail)
        except Exception as exc:  # the daemon may already have removed it
            return f"(no logs: {exc})"
        return raw.decode("utf-8", "replace").strip()

    def running(self) -> bool:
        try:
            return bool(self._api.inspect_container(self.id)["State"]["Running"])
        except Exception:
            return False

    def stop(self, timeout: int = 5) -> None:
        """Stop and remove the container; safe to call more than once."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(Exception):
            self._api.stop(self.id, timeout=timeout)
        with contextlib.suppress(Exception):
            self._api.remove_container(self.id, force=True)
        with contextlib.suppress(Exception):
            self._api.close()


def docker_api() -> Any:
    """A client of the Docker daemon (DOCKER_HOST, or the default socket), or a ContainerError naming the fix."""
    try:
        import docker
    except ImportError as exc:
        raise ContainerError(f"running images needs the deploy extra: pip install 'omnienv[deploy]' ({exc})") from None
    try:
        api = docker.from_env(timeout=900).api  # a build step may print nothing for minutes
    except docker.errors.DockerException as exc:
        raise ContainerError(
            f"no Docker daemon answers ({exc}): start one, or point DOCKER_HOST at its socket"
        ) from None
    return api


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_container(
    image: str,
    *,
    port: int | None = None,
    env: dict[str, str] | None = None,
    network: Literal["host", "bridge"] = "host",
    ready_timeout: float = 120.0,
    server_options: Sequence[str] = (),
) -> Container:
    """Start ``image`` and return once its server answers ``/health`` on 127.0.0.1.

    ``env`` adds variables to the container (a model key, ``OMNIENV_OPERATOR_TOKEN``); ``port`` is
    the host port (a free one by default); ``server_options`` go to the server (``--max-sessions``,
    ``--agent-only``...). A container that exits, or stays unhealthy for
    ``ready_timeout`` seconds, is removed and raises :class:`ContainerError` with its last logs,
    so a server that refused to start (a sandbox it cannot run here) says why.
    """
    api = docker_api()
    try:
        labels = api.inspect_image(image)["Config"].get("Labels") or {}
    except Exception as exc:
        api.close()
        raise ContainerError(f"no image '{image}' on this Docker daemon ({exc}): build it with omnienv build") from None
    port = port or _free_port()
    variables = dict(env or {})
    if network == "host":
        variables |= {"HOST": "127.0.0.1", "PORT": str(port)}
        host_config = api.create_host_config(network_mode="host")
    else:
        variables |= {"HOST": "0.0.0.0", "PORT": str(IMAGE_PORT)}
        host_config = api.create_host_config(port_bindings={IMAGE_PORT: ("127.0.0.1", port)})
    if labels.get(SANDBOX_LABEL) == "bubblewrap":
        host_config["SecurityOpt"] = ["seccomp=unconfined"]
        host_config["MaskedPaths"] = []  # = systempaths=unconfined: bubblewrap mounts a fresh /proc
        host_config["ReadonlyPaths"] = []
    try:
        created = api.create_container(
            image,
            command=list(server_options) or None,  # arguments of the image's entry command
            environment=variables,
            host_config=host_config,
            labels={OWNER_LABEL: "omnienv"},
            ports=[IMAGE_PORT] if network == "bridge" else None,
        )
    except Exception as exc:
        api.close()
        raise ContainerError(f"cannot start a container of '{image}': {exc}") from None
    container = Container(created["Id"], image, f"http://127.0.0.1:{port}", api)
    try:  # from here on, whatever happens (a stop signal included), the container does not outlive the call
        api.start(created["Id"])
        _wait_healthy(container, ready_timeout)
    except BaseException as exc:
        container.stop(timeout=1)
        if isinstance(exc, Exception) and not isinstance(exc, ContainerError):
            raise ContainerError(f"cannot start a container of '{image}': {exc}") from None
        raise
    return container


def _wait_healthy(container: Container, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0, trust_env=False) as http:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if http.get(f"{container.url}/health").status_code == 200:
                    return
            if not container.running():
                raise ContainerError(
                    f"the container of '{container.image}' exited before its server was healthy:\n{container.logs()}"
                )
            if time.monotonic() > deadline:
                raise ContainerError(
                    f"the container of '{container.image}' was not healthy at {container.url} within {timeout:g} s:\n"
                    f"{container.logs()}"
                )
            time.sleep(0.1)
