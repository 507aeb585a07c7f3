"""The verifier: a task's ``tests/`` graded in a sandbox of its own, over a copy of the final workspace.

Nothing the agent left can touch its grade: its processes are dead before the copy is made, the
verifier's sandbox is new (no process, file or ``/tmp`` of the agent's), ``/tests`` is the task's
own directory mounted read-only (whatever the agent put at that path is not there), and
``/logs/verifier`` starts empty (a planted ``reward.txt`` is not there either).

``bash /tests/test.sh`` runs from the working directory under the task's verifier timeout and
writes ``/logs/verifier/reward.txt`` (one number, read first, as Harbor does) or ``reward.json``
(named rewards; ``reward`` is the main one, else the only one, else their mean). A verifier that
times out, writes no reward or writes one that is not a finite number grades the workspace as it
stands: 0, with a note saying why. So does a workspace of more than ``Limits.work_files`` entries,
which only an agent's flood makes (where its storage is capped it cannot hold them): its copy
stops there, not minutes later.
Only a sandbox that cannot be made is an infrastructure failure (it raises).

The agent's code often runs while it is graded (a build, a script, a package under test), and in
one sandbox it could signal or trace the grader, write into its pipes or the reward, or read the
answers. The shipped graders run every such program through their library, ``tests/verifylib.py``,
in a sandbox nested in the verifier's (see its docstring); ``OMNIENV_VERIFIER=1`` tells them they
run here, where they must, and :func:`preflight_nesting` checks at start-up that they can.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from omnienv.envs.terminal.dockerfile import LOGS_MOUNT, TESTS_MOUNT, TOOLS_MOUNT
from omnienv.envs.terminal.harbor import HarborTask
from omnienv.envs.terminal.workspace import (
    SANDBOX_ENV,
    TooManyFilesError,
    copy_tree,
    read_plain_file,
    workspace_binds,
    workspace_dir,
)
from omnienv.sandboxes.bubblewrap import Limits, SandboxUnavailableError
from omnienv.sandboxes.sandbox import Sandbox

__all__ = ["GRADER_LIBRARY", "VERIFIER_PREFIX", "Verdict", "preflight_nesting", "verify"]

GRADER_LIBRARY = Path(__file__).parent / "tasks" / "_shared"
"""The shipped graders' library; a task whose ``tests/`` has its ``verifylib.py`` uses it."""
VERIFIER_PREFIX = "omnienv-verifier-"
HOME_MOUNT = "/opt/omnienv/home"
"""The verifier's home: empty, and where no workspace may be mounted. At ``/home/user``, a task
working there would hand the grader the agent's ``~/.gitconfig``, ``~/.jq`` or Python user site,
whose ``.pth`` files run in every ``python3`` the verifier starts."""
REQUIRE_NESTING = {"OMNIENV_VERIFIER": "1"}
"""Tells the shipped graders they run here, where they must nest (a task's ``ENV`` cannot undo it)."""
VERIFIER_ENV = {**SANDBOX_ENV, **REQUIRE_NESTING}
APT_SHIM = b"""#!/bin/sh
# A container-free verifier's system is the host's, read-only and offline: reading the task checked
# that the host has every package this test.sh installs, so installing, updating and cleaning are done.
for word in "$@"; do
  case "$word" in
    -*) ;;
    install|update|upgrade|clean|autoclean|autoremove) exit 0 ;;
    *) break ;;
  esac
done
echo "apt-get $*: not available here (a container-free verifier: the host's read-only system, no network)" >&2
exit 100
"""
"""``apt-get`` for the verifier: Harbor's verifiers install their tools before they run (``set -e``
and all), and the host's packages, like a Dockerfile's ``apt-get install`` at setup, stand in for them."""

_REWARD_BYTES = 65_536
_GRADER_FILES = 1_024
"""Files the verifier's storage holds beyond the agent's: its own directories and what its tests
write over a workspace the agent filled to its cap (the agent may delete its own overhead, its
``.gitconfig``, and the copy of a full workspace then left the verifier no room: that raised)."""
_LOG_BYTES = 4_000


@dataclass(frozen=True, slots=True)
class Verdict:
    reward: float
    rewards: dict[str, float] = field(default_factory=dict)
    note: str = ""
    output: str = ""


def verify(task: HarborTask, workspace: Path, limits: Limits) -> Verdict:
    """Grade ``workspace`` (a host directory, the agent's final one) with ``task``'s tests."""
    own = replace(limits, work_files=limits.work_files + _GRADER_FILES)
    sandbox = Sandbox(own, prefix=VERIFIER_PREFIX, hidden=(task.root,))
    try:
        home = sandbox.private_dir / "home"  # made first: a copy that fills the storage skips a file, never raises
        home.mkdir()
        os.chmod(workspace, 0o755)  # as it was made: the agent may have made its mount point unreadable to the host
        try:  # no link to /tests or /logs; no more files than the agent's storage holds where it is capped
            copy_tree(workspace, workspace_dir(sandbox), mounted_at=task.mount, limit=limits.work_files)
        except TooManyFilesError as exc:
            return Verdict(0.0, {}, f"the workspace holds {exc} (the sandbox's limit): its tests were not run")
        tests = sandbox.root / "tests"  # the task's own, with the files its suite shares by link
        copy_tree(task.tests_dir, tests, follow_within=task.root, strict=True)
        logs = sandbox.run_dir / "verifier"
        logs.mkdir()
        shims = sandbox.root / "shims"
        shims.mkdir()
        for name in ("apt-get", "apt"):
            (shims / name).write_bytes(APT_SHIM)
            (shims / name).chmod(0o555)
        env = {**SANDBOX_ENV, "HOME": HOME_MOUNT, **task.env, **task.verifier_env, **REQUIRE_NESTING}
        env["PATH"] = f"{TOOLS_MOUNT}:{env['PATH']}"  # APT_SHIM comes first
        # The launcher runs with the sandbox's own environment: the task's (a PATH or LD_PRELOAD into the
        # workspace) would have it run the agent's prlimit, env or bash. test.sh gets the task's.
        launch = {**VERIFIER_ENV, "HOME": HOME_MOUNT}
        script = 'cd "$1" && shift && exec env -- "$@" "$BASH" /tests/test.sh'
        process = sandbox.spawn(
            ["bash", "-c", script, "verifier", task.workdir, *(f"{key}={value}" for key, value in env.items())],
            env=launch,
            binds=[*workspace_binds(sandbox, task), (str(logs), LOGS_MOUNT), (str(home), HOME_MOUNT)],
            files=[(str(tests), TESTS_MOUNT), (str(shims), TOOLS_MOUNT)],
            stdout=subprocess.PIPE,  # read as it comes, its tail kept: never a file the verifier fills
            stderr=subprocess.STDOUT,
            # The shipped graders run the agent's code in sandboxes of their own; a foreign test.sh runs
            # it here, where it must not make a user namespace (in one it could act on host cgroups).
            nest=task.nests_its_grader,
        )
        kept = bytearray()
        reader = threading.Thread(target=_drain, args=(process.stdout, kept), daemon=True, name="verifier-output")
        reader.start()
        try:
            process.wait(timeout=task.verifier_timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            sandbox.kill()
            timed_out = True
        reader.join(timeout=10)  # the sandbox is gone, and with it every writer of the pipe
        output = bytes(kept).decode("utf-8", "replace")
        if timed_out:
            return Verdict(0.0, {}, f"the verifier ran over its {task.verifier_timeout:g} s", output)
        return _read_rewards(logs, output)
    finally:
        sandbox.close()


def preflight_nesting() -> None:
    """Raise :class:`SandboxUnavailableError` unless a verifier's sandbox can start the nested ones
    the shipped graders run the agent's code in (asked of their own library)."""
    probe = "import sys; sys.path.insert(0, '/tests'); import verifylib; verifylib.nesting_available()"
    sandbox = Sandbox(Limits(), prefix=VERIFIER_PREFIX)
    try:
        process = sandbox.spawn(
            ["python3", "-I", "-c", probe],
            env=VERIFIER_ENV,
            files=[(str(GRADER_LIBRARY), TESTS_MOUNT)],
            stderr=subprocess.PIPE,
            nest=True,
        )
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            sandbox.kill()
            _, err = process.communicate()
    finally:
        sandbox.close()
    if process.returncode != 0:
        reason = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise SandboxUnavailableError(
            f"the terminal's graders cannot sandbox the agent's code inside the verifier's sandbox ({reason[0]}): "
            "allow nested user namespaces (sysctl user.max_user_namespaces > 0, and no seccomp profile that "
            "blocks clone(CLONE_NEWUSER) inside a user namespace)"
        )


def _read_rewards(logs: Path, output: str) -> Verdict:
    """``reward.txt`` when there is one, as Harbor reads it (a verifier may write its details to
    ``reward.json`` beside it: ``{"passed": 3, "total": 5}`` is no reward of 4), else ``reward.json``."""
    raw_text = read_plain_file(logs, "reward.txt", _REWARD_BYTES)
    if raw_text is not None:
        try:
            value = float(raw_text.decode("utf-8", "replace").strip())
        except ValueError:
            return Verdict(0.0, {}, "reward.txt is not a number", output)
        if not math.isfinite(value):
            return Verdict(0.0, {}, "reward.txt is not a finite number", output)
        return Verdict(value, {"reward": value}, "", output)
    raw_json = read_plain_file(logs, "reward.json", _REWARD_BYTES)
    if raw_json is None:
        return Verdict(0.0, {}, "the verifier wrote no reward", output)
    try:
        data = json.loads(raw_json)
    except (ValueError, RecursionError):  # RecursionError: arrays nested past Python's limit
        return Verdict(0.0, {}, "reward.json is not JSON", output)
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        data = {"reward": data}
    if not isinstance(data, dict):
        return Verdict(0.0, {}, "reward.json is not an object of named rewards", output)
    numbers = {str(k): v for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    rewards = {k: float(v) if -1e308 < v < 1e308 else math.inf for k, v in numbers.items()}  # 10**400: no float
    main = rewards.get("reward", next(iter(rewards.values())) if len(rewards) == 1 else None)
    if main is None and rewards:
        main = sum(rewards.values()) / len(rewards)
    if main is None or not math.isfinite(main):
        return Verdict(0.0, {}, "reward.json holds no finite reward", output)
    # A part that is no number (0/0 of a metric beside the reward) is left out; the reward stands, as in Harbor.
    finite = {k: v for k, v in rewards.items() if math.isfinite(v)}
    dropped = sorted(set(rewards) - set(finite))
    return Verdict(main, finite, f"reward.json's {', '.join(dropped)} not finite: left out" if dropped else "", output)


def _drain(stream: IO[bytes], kept: bytearray) -> None:
    """Read the verifier's output to its end, keeping its last :data:`_LOG_BYTES`."""
    with stream:
        while chunk := os.read(stream.fileno(), 65_536):
            kept += chunk
            del kept[:-_LOG_BYTES]
