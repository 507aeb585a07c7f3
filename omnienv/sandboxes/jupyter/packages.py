"""What the kernel's Python sees: the base installation's standard library and a site directory of
only the kernel's packages, never omnienv's code or its tasks.

Mounting the server's virtualenv gave the agent ``import omnienv``, and with it the task module
that computes every answer. Instead, the sandbox gets:

- the **base interpreter** (``sys._base_executable``) and its installation, read-only, with every
  host site directory visible in the sandbox (the base's, the virtualenv's, Debian's
  ``dist-packages``, the directory holding ``omnienv``) hidden under an empty read-only directory;
- a **site directory** at :data:`SITE` holding the dependency closure of :data:`KERNEL_PACKAGES`
  (computed from ``importlib.metadata``: each distribution's requirements, markers evaluated, no
  extras) and nothing else: each top-level entry of each distribution (package, module, ``.libs``
  directory, ``.dist-info``) is mounted read-only on its own. omnienv itself, and any distribution
  whose files include an ``omnienv`` package, are never part of it;
- the in-kernel modules (:mod:`omnienv.sandboxes.jupyter.inkernel`), one file each at :data:`CODE`.

The view is computed once per process (:func:`kernel_view`), and the bytecode of what every kernel
imports as it starts with it: the kernel runs with ``-B`` from read-only mounts, so a module
without an up-to-date ``.pyc`` (installers that skip compiling: ``pip --no-compile``, uv by
default) would be compiled again by every kernel, about a second of CPU for each one started.
"""

from __future__ import annotations

import compileall
import functools
import glob
import importlib.metadata as metadata
import importlib.util
import os
import re
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CODE", "KERNEL_PACKAGES", "SITE", "KernelView", "closure", "kernel_view"]

KERNEL_PACKAGES = ("ipykernel", "orjson", "numpy", "pandas", "matplotlib")
"""What the kernel can import, with their dependencies. jupyter_client packs the kernel's messages
with ``orjson`` when it can import it, and with ``json`` (and a ``default`` hook called for every
date) when not, which took 7% of a kernel's CPU on a short cell."""
BOOT_PACKAGES = ("ipykernel", "orjson")
"""What every kernel imports as it starts: their bytecode is written once, on the host."""
SITE = "/opt/site"
"""The kernel's site directory, inside the sandbox."""
CODE = "/opt/kernel"
"""The in-kernel modules, inside the sandbox."""
INKERNEL = ("boot.py", "output.py", "shell.py")

_NEVER = {"omnienv", "omnienv-verifiers"}
_SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


@dataclass(frozen=True, slots=True)
class KernelView:
    """The mounts and command of a sandboxed kernel's Python."""

    python: str  # the interpreter, at the same path inside as on the host
    read_only: tuple[str, ...]  # host paths mounted at their own path
    files: tuple[tuple[str, str], ...]  # (host path, path inside), read-only: site entries, in-kernel code
    hidden: tuple[str, ...]  # host site directories the mounts above would show: covered by an empty dir
    distributions: tuple[str, ...]  # the closure, by normalised name
    bin_dir: str  # the interpreter's directory, first on the kernel's PATH

    def boot_argv(self, config: str) -> list[str]:
        return [self.python, "-I", "-B", f"{CODE}/boot.py", config]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots: tuple[str, ...] = KERNEL_PACKAGES) -> dict[str, metadata.Distribution]:
    """The installed distributions ``roots`` need (themselves included), by normalised name."""
    from packaging.markers import default_environment  # ipykernel's own dependency
    from packaging.requirements import InvalidRequirement, Requirement

    environment = {key: str(value) for key, value in default_environment().items()} | {"extra": ""}
    found: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = _normal(todo.pop())
        if name in found or name in _NEVER:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency that is not installed
        found[name] = dist
        for line in dist.requires or ():
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is None or requirement.marker.evaluate(environment):
                todo.append(requirement.name)
    return found


def _entries(dist: metadata.Distribution) -> set[str]:
    """The top-level names a distribution puts in its site directory (RECORD, or top_level.txt)."""
    names: set[str] = set()
    for file in dist.files or ():
        parts = Path(file).parts
        if parts and parts[0] != ".." and not parts[0].endswith(".pth"):
            names.add(parts[0] if parts[0] != "__pycache__" or len(parts) < 2 else str(Path(*parts[:2])))
    if not names:
        names.update(line.strip() for line in (dist.read_text("top_level.txt") or "").splitlines() if line.strip())
    info = getattr(dist, "_path", None)  # the .dist-info directory
    if info is not None:
        names.add(Path(info).name)
    return names


def _site_files(dists: dict[str, metadata.Distribution]) -> list[tuple[str, str]]:
    mounts: dict[str, str] = {}
    for dist in dists.values():
        base = Path(str(dist.locate_file("")))
        for name in sorted(_entries(dist)):
            host = base / name
            if name.split("/")[0] in _NEVER or not (host.exists() or host.with_suffix(".py").exists()):
                continue
            if not host.exists():  # top_level.txt names a module
                host, name = host.with_suffix(".py"), f"{name}.py"
            mounts.setdefault(f"{SITE}/{name}", str(host))
    return [(host, inside) for inside, host in sorted(mounts.items())]


def _visible(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _site_dirs() -> set[str]:
    """Every host directory that may hold installed packages, omnienv's among them."""
    dirs = set(site.getsitepackages()) | set(site.getsitepackages([sys.base_prefix]))
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    dirs |= {sysconfig.get_paths(vars=base)[key] for key in ("purelib", "platlib")}
    for pattern in ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages"):
        dirs |= set(glob.glob(pattern))
    import omnienv

    dirs |= {str(Path(path).resolve().parent) for path in omnienv.__path__}
    return {os.path.realpath(d) for d in dirs if os.path.isdir(d)}


def compile_bytecode(dists: dict[str, metadata.Distribution]) -> int:
    """Write the missing or stale ``.pyc`` files of ``dists`` (where the host may); how many."""
    written = 0
    for dist in dists.values():
        for file in dist.files or ():
            if file.suffix != ".py" or file.parts[0] == "..":
                continue
            path = Path(str(dist.locate_file(file)))
            cached = Path(importlib.util.cache_from_source(str(path), optimization=""))
            try:
                if cached.stat().st_mtime >= path.stat().st_mtime:
                    continue
            except OSError:
                pass
            # quiet=2: a file that does not compile (a template, a Python 2 leftover) is the
            # kernel's to meet at import, as it would be anyway; a read-only site is skipped the same way
            if compileall.compile_file(path, quiet=2, optimize=0):
                written += 1
    return written


@functools.cache
def kernel_view(packages: tuple[str, ...] = KERNEL_PACKAGES) -> KernelView:
    """The kernel's Python for this process (computed once per set of packages)."""
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    read_only = [] if _visible(prefix, _SYSTEM_ROOTS) else [prefix]
    if not _visible(python, (*_SYSTEM_ROOTS, *read_only)):
        read_only.append(os.path.dirname(python))
    roots = (*_SYSTEM_ROOTS, *read_only)
    hidden = sorted(d for d in _site_dirs() if _visible(d, roots))
    dists = closure(packages)
    compile_bytecode({name: dist for name, dist in dists.items() if name in closure(BOOT_PACKAGES)})
    code = Path(__file__).resolve().parent / "inkernel"
    files = [*_site_files(dists), *((str(code / name), f"{CODE}/{name}") for name in INKERNEL)]
    return KernelView(
        python, tuple(read_only), tuple(files), tuple(hidden), tuple(sorted(dists)), os.path.dirname(python)
    )
