"""Whether a task's commands can run container-free: with no network, on the host's own packages.

A task's Dockerfile ``RUN`` steps (at setup) and its ``tests/test.sh`` (after the episode) both run
in a sandbox with no network over the host's read-only system. A command that installs software
or downloads a file cannot work there, so reading the task refuses it, naming the line: where a
verifier fetches its tools as it runs (most Terminal-Bench verifiers install ``uv`` with ``curl``,
then pytest with ``uvx``), every episode would otherwise be graded 0 by a grader that never ran.
A ``test.sh`` may still reach servers on loopback (``curl http://localhost:8000``), as the agent's
own program may serve there.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
from functools import cache

__all__ = ["host_has_package", "installs_over_network", "script_needs", "system_packages"]

_NETWORK = re.compile(r"\b(apt-get|apt|apk|yum|dnf|pip3?|uv|uvx|npm|npx|curl|wget|conda|gem|cargo)\s+\S", re.I)
"""A build step that runs any of these tools needs what only an image build has (setup runs no servers)."""
_APT_NOOP = re.compile(r"^(apt-get|apt) (update|clean|autoclean)( -\S+)*$|^rm -rf /var/lib/apt/lists(/\*)?$")
_APT_INSTALL = re.compile(r"^(DEBIAN_FRONTEND=\S+ )?(apt-get|apt) install\b(.*)$")
_INSTALLER = re.compile(
    r"(?:^|[\s;&|(`])((?:pip3?|pipx|python[0-9.]*\s+-m\s+pip)\s+install\b(?!.*--no-index)"
    r"|uvx\b|uv\s+(?:pip\s+install|add|sync|tool\s+(?:install|run))\b|uv\s+run\b.*\s--with\b"
    r"|(?:npm|pnpm|yarn)\s+(?:install|i|ci|add|dlx)\b|npx\b"
    r"|apk\s+add\b|(?:yum|dnf|microdnf|zypper)\s+install\b|(?:conda|mamba|micromamba)\s+(?:install|create)\b"
    r"|gem\s+install\b|cargo\s+install\b|go\s+(?:install|get)\b)"
)
"""A package manager fetching what it installs (``pip install --no-index`` installs from local files)."""
_URL_HOST = re.compile(
    r"\b(?:https?|ftps?|ssh|git|rsync)://(?:[^@/\s'\"]+@)?(\[[0-9A-Fa-f:.]+\]|[^/\s:'\"?#]+)|\bgit@([\w.-]+):"
)


def system_packages(command: str) -> list[str] | None:
    """The Debian packages a RUN line only installs (``apt-get update && apt-get install -y ...``),
    or None when the line does anything else."""
    packages: list[str] = []
    for segment in re.split(r"&&|;|\n", command):
        segment = " ".join(segment.split())
        if not segment or _APT_NOOP.match(segment):
            continue
        install = _APT_INSTALL.match(segment)
        if install is None:
            return None
        packages += _apt_packages(install.group(3))
    return packages or None


@cache
def host_has_package(package: str) -> bool:
    """Whether this (Debian-based) host has ``package`` installed, so the sandbox, which mounts the
    host's system read-only, has what the image would have installed."""
    try:
        found = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0 and found.stdout.endswith("installed") and "not-installed" not in found.stdout


def installs_over_network(command: str) -> bool:
    """Whether a Dockerfile ``RUN`` step (one that is not only an ``apt-get install``) fetches software."""
    return _NETWORK.search(command) is not None


def script_needs(script: str) -> list[tuple[int, str, str]]:
    """``(line number, line, why)`` for each line of a shell script that needs the network or a
    Debian package this host lacks."""
    needs = []
    for number, line in _lines(script):
        why = _line_needs(line)
        if why is not None:
            needs.append((number, line, why))
    return needs


def _lines(script: str) -> list[tuple[int, str]]:
    """Non-comment lines, each with its continuation lines joined, numbered by where it starts."""
    found: list[tuple[int, str]] = []
    current, start = "", 0
    for number, raw in enumerate(script.splitlines(), 1):
        stripped = raw.strip()
        if not current:
            if not stripped or stripped.startswith("#"):
                continue
            start = number
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        found.append((start, current + stripped))
        current = ""
    if current:
        found.append((start, current))
    return found


def _line_needs(line: str) -> str | None:
    for segment in re.split(r"&&|\|\||;|\|", line):
        segment = " ".join(segment.split()).removeprefix("sudo ")
        install = _APT_INSTALL.match(segment)
        if install is not None:
            missing = [package for package in _apt_packages(install.group(3)) if not host_has_package(package)]
            if missing:
                return f"installs packages this host lacks ({', '.join(missing)})"
            continue
        installer = _INSTALLER.search(segment)
        if installer is not None:
            words = installer.group(1).split()
            return f"installs software over the network ({' '.join(words[:4] if words[1:2] == ['-m'] else words[:2])})"
        for match in _URL_HOST.finditer(segment):
            host = (match.group(1) or match.group(2) or "").strip("[]")
            if not _loopback(host):
                return f"downloads from {host}"
    return None


def _apt_packages(arguments: str) -> list[str]:
    return [word.split("=")[0] for word in arguments.split() if not word.startswith("-")]


def _loopback(host: str) -> bool:
    if host.lower() in ("localhost", "0.0.0.0") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
