"""The terminal's workspace, as the host mounts it and copies it, against an agent that reshapes it.

The workspace is mounted again at every shell restart and copied for the verifier afterwards. If
its host directory sat in the agent's writable home, the agent could rename it and leave a link to
any host directory in its place: the next shell would mount that directory read-write at ``/app``
(the task's tests and solution, the project's files), and the grade would be read from it. It
lives beside the home instead; here the agent tries that, and nests directories deeper than the
host's copy could once follow, which must be graded and never void the episode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

from omnienv.core import ToolCall
from omnienv.envs.terminal import harbor_environment
from omnienv.envs.terminal.workspace import copy_tree
from tests.envs.test_terminal import make_task


def run(command: str) -> ToolCall:
    return ToolCall("run", {"command": command})


AS_OWNER_ONLY = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
"""A server that reads the agent's files as their owner, as an unprivileged server does (root without
the capabilities that let it read any file)."""
PLAY_UNREADABLE = """
import json, sys
from pathlib import Path
from omnienv.core import ToolCall
from omnienv.envs.terminal import harbor_environment
env = harbor_environment(Path(sys.argv[1]))()
try:
    env.reset("train/answer")
    env.step(ToolCall("run", {"command": "echo 42 > out.txt; mkdir hidden; chmod 000 hidden /app"}))
    result = env.step(ToolCall("submit", {}))
    print(json.dumps({"reward": result.reward, "failure": str(result.failure) if result.failure else None}))
finally:
    env.close()
"""


def test_the_agent_cannot_put_a_host_directory_in_place_of_its_workspace(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text("host secret\n")
    env = harbor_environment(make_task(tmp_path / "suite"))()
    try:
        env.reset("train/answer")
        home = env.step(run("ls -A ~")).observation.text
        assert "keep" not in home and "workspace" not in home, home
        for command in (f"mv ~/workspace ~/old; rm -rf ~/workspace; ln -s {host} ~/workspace", "exit"):
            env.step(run(command))  # then a fresh shell, which mounts the workspace again
        seen = env.step(run("cat /app/secret.txt; ls /app; echo 42 > /app/out.txt")).observation.text
        assert "host secret" not in seen and "keep.txt" in seen, seen
        assert [p.name for p in host.iterdir()] == ["secret.txt"]
        result = env.step(ToolCall("submit", {}))
        assert (result.failure, result.reward) == (None, 1.0), result
    finally:
        env.close()


def test_directories_nested_past_pythons_recursion_limit_are_graded(tmp_path: Path) -> None:
    env = harbor_environment(make_task(tmp_path))()
    try:
        env.reset("train/answer")
        nest = "echo 42 > out.txt && for i in $(seq 1100); do mkdir d && cd d || exit 1; done && echo nested"
        assert "nested" in env.step(run(nest)).observation.text
        result = env.step(ToolCall("submit", {}))
        assert (result.failure, result.reward) == (None, 1.0), result
    finally:
        env.close()


def test_an_agent_that_fills_its_memory_with_files_is_scored_never_void(tmp_path: Path) -> None:
    """The workspace is kept in memory and charged to the sandbox, so files that fill its memory leave
    no room for a new shell: the agent did that, and the episode ends graded, never void."""
    env = harbor_environment(make_task(tmp_path, toml_extra="[environment]\nmemory_mb = 64\nstorage_mb = 256\n"))()
    try:
        env.reset("train/answer")
        env.step(run("echo 42 > out.txt"))
        fill = "for i in $(seq 256); do f=$(mktemp fill.XXXXXX) && head -c 1M /dev/zero > $f || break; done; exit"
        for _ in range(30):  # each shell fills what it can, until none can start
            result = env.step(run(fill))
            assert result.failure is None, result.failure
            if result.done:
                break
        assert result.done and result.info["ended_by_agent"]["reason"] == "memory_limit", result
        assert result.reward == 1.0, "the workspace is graded as the agent left it"
    finally:
        env.close()


def test_a_workspace_the_agent_made_unreadable_is_graded_never_void(tmp_path: Path) -> None:
    """``chmod 000 /app`` makes the workspace's host directory unreadable to a server that is not
    root: its copy for the verifier failed, and the episode was void."""
    task = make_task(tmp_path)
    child = subprocess.run(
        [*AS_OWNER_ONLY, sys.executable, "-c", PLAY_UNREADABLE, str(task)],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-2000:]
    assert json.loads(child.stdout.splitlines()[-1]) == {"reward": 1.0, "failure": None}, child.stderr[-2000:]


def test_the_copy_of_a_directory_of_many_files_holds_no_list_of_them(tmp_path: Path) -> None:
    """An agent's sandbox may hold a million empty files (its memory, not its storage, bounds them):
    the host's copy for the verifier listed each directory whole, hundreds of megabytes of the
    server's memory per episode."""
    source = tmp_path / "workspace" / "many"
    source.mkdir(parents=True)
    for number in range(10_000):
        os.close(os.open(source / str(number), os.O_CREAT | os.O_WRONLY, 0o644))
    tracemalloc.start()
    try:
        copy_tree(source.parent, tmp_path / "copy")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(os.listdir(tmp_path / "copy" / "many")) == 10_000
    assert peak < 2_000_000, f"the copy held {peak / 1e6:.0f} MB at once"
