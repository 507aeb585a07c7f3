"""The contract must load without the network stack: environment authors depend on core alone."""

from __future__ import annotations

import subprocess
import sys

NETWORK_STACK = ("starlette", "uvicorn", "httpx", "websockets", "fastapi", "aiohttp", "requests")


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
