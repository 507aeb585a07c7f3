"""Imports flow one way, core <- protocol <- server/client <- the rest <- app, cli (DESIGN.md).

Two checks: the contract loads without the network stack at run time, and, statically, no module
under ``omnienv`` imports a layer that the order forbids (top-level and function-level imports
alike, ``TYPE_CHECKING`` ones included).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import omnienv

NETWORK_STACK = ("starlette", "uvicorn", "httpx", "websockets", "fastapi", "aiohttp", "requests")

PACKAGE = Path(omnienv.__file__).resolve().parent

# The layer order of DESIGN.md, lowest tier first. A module may import its own layer and every
# layer of a lower tier; a layer of its own tier only where SIDEWAYS allows it; never a higher one.
# Environments sit above the machinery they use: their scripted players read rollout's Episode,
# their tools run in sandboxes. ui is pages the app serves. ray serves the app on Ray actors.
TIERS: tuple[frozenset[str], ...] = (
    frozenset({"core"}),  # the contract; the top-level package ``omnienv`` re-exports it
    frozenset({"protocol"}),
    frozenset({"server", "client"}),
    frozenset({"dialects", "sandboxes", "catalog", "capture", "rollout", "deploy", "scaffold", "ui"}),
    frozenset({"envs", "agents"}),
    frozenset({"app", "ray"}),
    frozenset({"cli"}),
)
SIDEWAYS: frozenset[tuple[str, str]] = frozenset(
    {
        ("ray", "app"),  # `omnienv serve --ray` is the app with sessions on Ray actors
    }
)
TIER = {layer: n for n, layers in enumerate(TIERS) for layer in layers}


def layer_of(module: str) -> str:
    """``omnienv.server.app`` -> ``server``; the top-level package counts as core."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "core"


def allowed(source: str, target: str) -> bool:
    if source == target:
        return True
    if TIER[target] < TIER[source]:
        return True
    return TIER[target] == TIER[source] and (source, target) in SIDEWAYS


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: Path) -> bool:
    """Whether ``name`` (``omnienv.x.y``) is a module or package on disk."""
    path = root.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imported(tree: ast.AST, module: str, is_package: bool, root: Path = PACKAGE) -> Iterator[tuple[int, str]]:
    """``(line, omnienv.module)`` for every import of omnienv in ``tree``, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing module's package
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = package[: len(package) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            for alias in node.names:  # `from omnienv import server` imports omnienv.server
                child = f"{name}.{alias.name}"
                yield node.lineno, child if _is_module(child, root) else name


def violations_in(source: str, module: str, where: str, is_package: bool = False, root: Path = PACKAGE) -> list[str]:
    """``file:line -> target (why)`` for each import of ``source`` that the layer order forbids."""
    found = []
    mine = layer_of(module)
    for line, target in sorted(set(imported(ast.parse(source), module, is_package, root))):
        if target != root.name and not target.startswith(f"{root.name}."):
            continue
        theirs = layer_of(target)
        if mine not in TIER:
            found.append(f"{where}:{line} -> {target} (layer '{mine}' is not in TIERS: place it)")
        elif theirs not in TIER:
            found.append(f"{where}:{line} -> {target} (layer '{theirs}' is not in TIERS: place it)")
        elif not allowed(mine, theirs):
            found.append(f"{where}:{line} -> {target} ({mine} may not import {theirs})")
    return found


def test_imports_follow_the_layer_order() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE.parent).as_posix()
        found += violations_in(path.read_text(), module_name(path), where, path.name == "__init__.py")
    assert not found, "imports against the layer order (DESIGN.md):\n" + "\n".join(found)


def test_the_layer_check_can_fail() -> None:
    source = (
        "import json\n"
        "from omnienv.core import tool\n"  # down: fine
        "from omnienv import protocol\n"  # `from package import module`: the module counts
        "def later():\n"
        "    import omnienv.dialects.ors\n"  # up, inside a function
        "from ..client import connect\n"  # sideways, relative
    )
    found = violations_in(source, "omnienv.server.app", "omnienv/server/app.py")
    assert found == [
        "omnienv/server/app.py:5 -> omnienv.dialects.ors (server may not import dialects)",
        "omnienv/server/app.py:6 -> omnienv.client (server may not import client)",
    ]
    assert violations_in("import omnienv.server\n", "omnienv.core.env", "x.py") == [
        "x.py:1 -> omnienv.server (core may not import server)"
    ]
    assert violations_in("from omnienv.sandboxes.xvfb import XClient\n", "omnienv.envs.desktop.env", "x.py") == []
    assert violations_in("from omnienv.envs import wordle\n", "omnienv.rollout.x", "x.py") == [
        "x.py:1 -> omnienv.envs.wordle (rollout may not import envs)"
    ]
    assert "not in TIERS" in violations_in("import omnienv.core\n", "omnienv.newthing.x", "x.py")[0]


def test_core_imports_no_network_stack() -> None:
    code = (
        "import sys, omnienv.core, omnienv.envs.wordle; "
        f"print(','.join(m for m in {NETWORK_STACK!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""


def test_the_check_itself_can_fail() -> None:
    code = "import sys, omnienv.core, json; print('json' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "True"
