"""``omnienv push``: an environment as a Hugging Face Space (Docker SDK), written and uploaded.

The bundle is the image's build context plus the Space's ``README.md``, whose front matter tells
the Hub to build the ``Dockerfile`` and route to the server's port. The server answers requests
for the Space's own host name (``OWNER-NAME.hf.space``), which the bundle sets in
``OMNIENV_ALLOW_HOST``. Its ``entrypoint.sh`` serves the environment from the folder itself too,
so a bundle can be tried locally before it is uploaded.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from omnienv.deploy.context import DEFAULT_BASE, PORT, DeployError, plan_image, write_context

__all__ = ["push_space", "space_host", "write_space_bundle"]

_SPACE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def space_host(space: str) -> str:
    """The host name the Hub serves ``OWNER/NAME`` at: lower case, ``_`` and ``.`` as ``-``."""
    return re.sub(r"[._/]", "-", space.lower()) + ".hf.space"


def write_space_bundle(env: str, space: str, out: Path, *, base: str = DEFAULT_BASE) -> Path:
    """Write the Space bundle of ``env`` for ``space`` (``OWNER/NAME``) into ``out``."""
    if not _SPACE_ID.match(space):
        raise DeployError(f"'{space}' is not a Space id: pass OWNER/NAME, for example me/wordle")
    plan = plan_image(env, base=base)
    plan = replace(plan, variables=(*plan.variables, ("OMNIENV_ALLOW_HOST", space_host(space))))
    write_context(plan, out)
    sandbox_note = (
        "\nThis environment runs the agent's code in bubblewrap, which needs user namespaces and a fresh "
        "`/proc` inside the container: where the host does not grant them, the server refuses to start "
        "and says why, instead of running the agent's code unsandboxed.\n"
        if plan.sandboxed
        else ""
    )
    (out / "README.md").write_text(
        f"""---
title: {plan.name}
emoji: 🎲
colorFrom: indigo
colorTo: green
sdk: docker
app_port: {PORT}
pinned: false
tags:
  - omnienv
  - openenv
  - reinforcement-learning
---

# {plan.name}

An omnienv environment served on every transport on one port: OpenEnv's WebSocket (`/ws`),
stateful HTTP sessions, MCP (`/mcp`), ORS and NeMo Gym routes, a play page at `/ui`.

```python
from omnienv.client import WebSocketClient

with WebSocketClient.connect("https://{space_host(space)}") as env:
    print(env.reset().text)
```

Run it locally from this folder: `PYTHON=python3 sh entrypoint.sh` (omnienv's requirements
installed), or `docker build -t {plan.name} . && docker run --network host {plan.name}`.
{sandbox_note}"""
    )
    return out


def push_space(bundle: Path, space: str, *, token: str | None = None, private: bool = False) -> str:
    """Create the Space (Docker SDK) if needed, upload ``bundle`` to it, and return its URL.

    The token is ``token``, else huggingface_hub's own (``HF_TOKEN``, or ``hf auth login``).
    """
    try:
        from huggingface_hub import HfApi, get_token
    except ImportError as exc:
        raise DeployError(f"uploading needs the deploy extra: pip install 'omnienv[deploy]' ({exc})") from None
    token = token or get_token()
    if not token:
        raise DeployError(
            "no Hugging Face token: set HF_TOKEN, run `hf auth login`, or pass --token; "
            "--dry-run --out DIR writes the bundle without uploading"
        )
    api = HfApi(token=token)
    try:
        api.create_repo(space, repo_type="space", space_sdk="docker", exist_ok=True, private=private)
        api.upload_folder(folder_path=str(bundle), repo_id=space, repo_type="space", commit_message="omnienv push")
    except Exception as exc:  # the Hub refused (token, name, quota) or could not be reached
        raise DeployError(f"uploading {bundle} to the Space {space} failed: {type(exc).__name__}: {exc}") from None
    return f"{api.endpoint}/spaces/{space}"
