"""``omnienv build``: an environment's image, built by the local Docker daemon from its context.

Builds run with the host's network, so ``apt-get`` and ``pip`` inside reach the same mirrors as the
machine does, and no bridge network is needed. Progress lines stream to ``progress`` as the daemon
sends them; a failed step raises :class:`ImageBuildError` with the daemon's message and the last
lines of the log.
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Callable
from pathlib import Path

from omnienv.client.container import ContainerError, docker_api
from omnienv.deploy.context import DEFAULT_BASE, plan_image, write_context

__all__ = ["ImageBuildError", "build_image", "default_tag"]


class ImageBuildError(ContainerError):
    """The daemon could not build the image; the message carries its error and the last log lines."""


def default_tag(name: str) -> str:
    """``omnienv-<name>:latest``, the tag an image gets when none is asked for."""
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in name.lower()).strip("-._") or "env"
    return f"omnienv-{safe}:latest"


def build_image(
    env: str,
    *,
    tag: str | None = None,
    base: str = DEFAULT_BASE,
    context: Path | None = None,
    ca_cert: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> str:
    """Build the image of ``env`` and return its tag.

    ``context`` keeps the build context in that folder (to read or rebuild by hand); by default
    it is written to a temporary folder that is removed afterwards. ``ca_cert``: see :func:`plan_image`.
    """
    plan = plan_image(env, base=base, ca_cert=ca_cert)
    tag = tag or default_tag(plan.name)
    if context is not None:
        _build(write_context(plan, context), tag, progress)
        return tag
    with tempfile.TemporaryDirectory(prefix="omnienv-image-") as folder:
        _build(write_context(plan, Path(folder) / "context"), tag, progress)
    return tag


def _build(context: Path, tag: str, progress: Callable[[str], None] | None) -> None:
    api = docker_api()
    recent: deque[str] = deque(maxlen=30)
    try:
        for chunk in api.build(path=str(context), tag=tag, rm=True, forcerm=True, network_mode="host", decode=True):
            if "error" in chunk:
                detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
                log = "\n".join(recent)
                raise ImageBuildError(f"building {tag} failed: {detail.strip()}\n{log}")
            line = str(chunk.get("stream") or chunk.get("status") or "").rstrip()
            if line:
                recent.append(line)
                if progress is not None:
                    progress(line)
    except ImageBuildError:
        raise
    except Exception as exc:  # the daemon went away, or refused the request
        raise ImageBuildError(f"building {tag} failed: {type(exc).__name__}: {exc}") from None
    finally:
        api.close()
