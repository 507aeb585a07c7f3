"""Virtualenvs for peer frameworks, made on demand by the tests themselves.

Peers' packages conflict with each other and with ours, so each peer gets its own virtualenv
under ``.venvs/<name>``, built from ``tests/peers/<name>/requirements.txt`` the first time a test
asks for it, and rebuilt when that file or omnienv's own requirements change (most peers install
omnienv from this checkout, with extras). A file lock keeps parallel test runs from
building the same virtualenv twice. A peer that pip cannot install from a requirements file
alone adds ``tests/peers/<name>/install.sh``, run with the virtualenv's interpreter as ``$1``.
"""

from __future__ import annotations

import contextlib
import fcntl
import filecmp
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "tests" / "peers"
VENVS = ROOT / ".venvs"


def peer_python(name: str, python: str = "python3.11") -> Path:
    """The interpreter of peer ``name``'s virtualenv, created or refreshed as needed."""
    requirements = PEERS / name / "requirements.txt"
    if not requirements.exists():
        raise FileNotFoundError(f"no {requirements}: list the peer's pinned packages there")
    venv = VENVS / name
    stamp = venv / ".requirements-sha256"
    install = PEERS / name / "install.sh"  # optional extra step, e.g. a --no-deps install
    extra = install.read_bytes() if install.exists() else b""
    wanted = hashlib.sha256(requirements.read_bytes() + extra + own_requirements()).hexdigest()
    VENVS.mkdir(exist_ok=True)
    with open(VENVS / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.exists() and stamp.read_text() == wanted):
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([shutil.which(python) or sys.executable, "-m", "venv", str(venv)], check=True)
            # --no-compile: Python compiles the modules a test imports on first use; compiling every installed
            # file (torch, ray, pandas...) up front is CPU time the suite never needs
            pip = [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-compile",
            ]
            env = {**os.environ, "PIP_NO_INPUT": "1"}
            subprocess.run([*pip, "-r", str(requirements)], check=True, env=env, cwd=PEERS / name)
            if install.exists():
                subprocess.run(
                    ["sh", str(install), str(venv / "bin" / "python")], check=True, env=env, cwd=PEERS / name
                )
            share_identical_files(venv)
            _compile_kernel_bytecode(venv / "bin" / "python")
            stamp.write_text(wanted)
    return venv / "bin" / "python"


SHARED_MIN_BYTES = 16_384


def share_identical_files(venv: Path) -> int:
    """Hard-link the files of ``venv`` that are byte for byte those of a built virtualenv (the
    project's own or another peer's) at the same place, and return the bytes saved.

    The peers pin many of the same packages (torch twice, numpy and pandas in nearly all): linked,
    the virtualenvs take about half the disk, and a CI machine's disk is shared. Nothing writes an
    installed file in place (pip and Python's bytecode cache replace files), so a link is never
    changed under another virtualenv."""
    built = [ROOT / ".venv"] + [v for v in VENVS.iterdir() if v != venv and (v / ".requirements-sha256").exists()]
    existing: dict[tuple[str, int], Path] = {}
    for other in built:
        for path, size in _installed_files(other):
            existing.setdefault((str(path.relative_to(other)), size), path)
    saved = 0
    for path, size in _installed_files(venv):
        match = existing.get((str(path.relative_to(venv)), size))
        with contextlib.suppress(OSError):  # a virtualenv being rebuilt beside this one
            if match is not None and filecmp.cmp(path, match, shallow=False):
                link = path.with_name(f".{path.name}.shared")
                os.link(match, link)
                os.replace(link, path)
                saved += size
    return saved


def _installed_files(venv: Path) -> list[tuple[Path, int]]:
    """The regular files under ``venv``'s ``lib/`` worth sharing, with their sizes."""
    files = []
    for folder, _, names in os.walk(venv / "lib"):
        for name in names:
            path = Path(folder, name)
            with contextlib.suppress(OSError):
                status = path.lstat()
                if status.st_size >= SHARED_MIN_BYTES and stat.S_ISREG(status.st_mode):
                    files.append((path, status.st_size))
    return files


def own_requirements() -> bytes:
    """omnienv's dependencies and extras as pyproject.toml declares them, in a stable form."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {"dependencies": project.get("dependencies", []), "extras": project.get("optional-dependencies", {})}
    return repr(sorted(wanted.items())).encode()


def _compile_kernel_bytecode(python: Path) -> None:
    """Write the bytecode a sandboxed kernel imports (pip ran with --no-compile) while the venv is
    built, so that the first kernel pools of the tests that use it do not all write it at once."""
    script = (
        "import importlib.util\n"
        "if importlib.util.find_spec('ipykernel') and importlib.util.find_spec('omnienv'):\n"
        "    from omnienv.sandboxes.jupyter.packages import kernel_view; kernel_view()\n"
    )
    subprocess.run([str(python), "-c", script], check=True, cwd=ROOT)


FIRST_NEEDED = ("trl", "verifiers", "verifiers03", "nemo_gym", "openenv", "minisweagent", "inspect", "openreward")
"""Peers in the order the suite first asks for them (tests/conftest.py: the training test, the
matrix, the Verifiers tests, then tests/agents, tests/capture...)."""


def prebuild(jobs: int = 2) -> None:
    """Build every peer's virtualenv, ``jobs`` at a time, while the suite's first tests run.

    ``make test`` starts this beside pytest: pip waits on downloads and disks as much as on the
    CPU, so the builds overlap with tests instead of each stalling the test that needs it first.
    A test that gets there first waits on the build's lock; a build that fails here is built (and
    fails, loudly) again by the test that needs it.
    """
    from concurrent.futures import ThreadPoolExecutor

    names = sorted(p.parent.name for p in PEERS.glob("*/requirements.txt"))
    ordered = [n for n in FIRST_NEEDED if n in names] + [n for n in names if n not in FIRST_NEEDED]

    def build(name: str) -> None:
        try:
            peer_python(name)
        except Exception as exc:  # the test that needs it reports it
            print(f"prebuilding the {name} virtualenv failed: {exc}", file=sys.stderr)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(build, ordered))


if __name__ == "__main__":
    prebuild()
