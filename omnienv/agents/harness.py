"""What a harness is to the runner: a program started once per episode, told where everything is.

The runner knows no harness in particular. For each episode it makes an :class:`EpisodeContext`
(the instruction, the model's per-episode base URL on the capture proxy, the shell relay's URL,
a scratch directory on the host) and asks the harness for a :class:`Launch`: the argv, the
environment variables, what to write to its stdin. After the process exits (or is stopped) it asks
for the harness's own account of how it ended (:meth:`Harness.outcome`), kept beside the episode.

:func:`base_environ` is the environment every harness starts from, and the reasons for it:

- ``PATH`` starts with the episode's ``bin/`` (the shim ``omnienv-shell``, under each of the
  harness's ``shell_names``), and ``$SHELL`` is the shim: commands go to the sandbox;
- ``HOME`` and ``TMPDIR`` are the episode's own directories: concurrent episodes do not share a
  harness's config, caches or history, and nothing of the user's home is read into an episode;
- ``HTTP(S)_PROXY`` point at a closed loopback port, with ``NO_PROXY`` for loopback: the harness
  needs nothing but the proxy and the relay (both on 127.0.0.1), so any other request it makes on
  its own (update checks, telemetry, price lists) fails at once instead of leaving the machine.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from omnienv.agents.shim import URL_VARIABLE, baked

__all__ = ["EpisodeContext", "Harness", "Launch", "base_environ", "install_shim", "read_left"]

SHIM = "omnienv-shell"
DEAD_PROXY = "http://127.0.0.1:9"
"""The discard port: nothing listens there, so a request sent through it is refused at once."""
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_LOOPBACK = "127.0.0.1,localhost,::1"


@dataclass(frozen=True, slots=True)
class EpisodeContext:
    """Where one episode's harness finds everything."""

    index: int
    instruction: str
    model: str
    base_url: str
    """The model's OpenAI-compatible base URL: the capture proxy's URL for this episode (``.../v1``)."""
    api_key: str
    shell_url: str
    """The shell relay's URL for this episode (see :mod:`omnienv.agents.relay`)."""
    workdir: Path
    """The episode's scratch directory on the host: the harness's working directory."""
    timeout_s: float

    @property
    def bin_dir(self) -> Path:
        return self.workdir / "bin"

    @property
    def shell(self) -> Path:
        return self.bin_dir / SHIM

    @property
    def home(self) -> Path:
        return self.workdir / "home"


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start a harness: argv, its whole environment, and its stdin (None: nothing)."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes | None = None


class Harness(Protocol):
    """A loop-owning agent the runner can start on an episode."""

    @property
    def name(self) -> str: ...

    @property
    def submit_marker(self) -> str | None:
        """A command output's first line that means "submit" (see :mod:`omnienv.agents.relay`)."""
        ...

    @property
    def shell_names(self) -> tuple[str, ...]:
        """The names the shim gets in the episode's ``bin/`` (``omnienv-shell`` always)."""
        ...

    def check(self) -> None:
        """Raise :class:`~omnienv.core.UsageError` naming the fix when it cannot run here."""
        ...

    def launch(self, context: EpisodeContext) -> Launch: ...

    def outcome(self, context: EpisodeContext) -> dict[str, Any]:
        """The harness's own account of how it ended (JSON), read from what it left in ``workdir``."""
        ...


def install_shim(context: EpisodeContext, names: tuple[str, ...] = ()) -> Path:
    """Write the episode's shim (relay URL baked in) as ``bin/omnienv-shell`` and under ``names``."""
    context.bin_dir.mkdir(parents=True, exist_ok=True)
    context.shell.write_text(baked(context.shell_url, sys.executable), encoding="utf-8")
    context.shell.chmod(0o700)  # its relay URL is the episode's secret
    for name in names:
        if name != SHIM and "/" not in name:
            alias = context.bin_dir / name
            alias.unlink(missing_ok=True)
            alias.symlink_to(SHIM)
    return context.shell


def base_environ(context: EpisodeContext, inherited: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a harness starts from (see the module's docstring for each choice)."""
    env = dict(os.environ if inherited is None else inherited)
    for home in (context.home, context.workdir / "tmp"):
        home.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "PATH": os.pathsep.join([str(context.bin_dir), env.get("PATH", os.defpath)]),
            "SHELL": str(context.shell),
            "HOME": str(context.home),
            "TMPDIR": str(context.workdir / "tmp"),
            URL_VARIABLE: context.shell_url,
            "NO_PROXY": _LOOPBACK,
            "no_proxy": _LOOPBACK,
        }
    )
    env.update(dict.fromkeys(_PROXY_VARIABLES, DEAD_PROXY))
    return env


def read_left(path: Path, limit: int = 64 * 1024 * 1024) -> str | None:
    """A regular file the harness left in its directory, as text; None for what is not one (a FIFO,
    whose read would block the runner for good, a link, to ``/dev/zero`` say) or is over ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return stream.read(limit + 1)[:limit].decode("utf-8", "replace")


def executable(name: str) -> str | None:
    """``name`` as a path that exists, or found on the host's PATH."""
    if os.sep in name:
        return name if Path(name).exists() else None
    return shutil.which(name)
