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
import time
import tracemalloc
from pathlib import Path

import pytest

from omnienv.core import ToolCall
from omnienv.envs.terminal import harbor_environment
from omnienv.envs.terminal.env import FILES_PER_MB
from omnienv.envs.terminal.workspace import TooManyFilesError, copy_tree
from omnienv.sandboxes import sandbox as sandbox_module
from tests.envs.test_terminal import make_task, play


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


FLOOD = (
    "python3 -Ic 'import itertools, os\n"
    "for n in itertools.count():\n"
    '    os.mkdir(str(n)) if n % 2 else open(str(n), "x").close()\''
)
"""Empty files and directories, as many as the agent's storage takes: none costs a byte."""


@pytest.mark.parametrize(
    ("solve", "reward"), [("true", 0.0), ("echo 42 > out.txt; rm ~/.gitconfig", 1.0)], ids=["loses", "wins"]
)
def test_an_agent_that_floods_its_workspace_with_files_is_graded_in_seconds(
    tmp_path: Path, solve: str, reward: float
) -> None:
    """Files were capped in bytes only: a losing agent's millions of empty files made the host's copy
    for the verifier take minutes, past the server's step deadline, and a void episode is never
    scored. Its storage now holds as many files as its size allows (:data:`FILES_PER_MB`), and the
    verifier's holds the copy of a full one and its own files, even once the agent deleted its own
    overhead (``~/.gitconfig``): the verifier then found no room for its home, raised, and voided."""
    env = harbor_environment(make_task(tmp_path, toml_extra="[environment]\nstorage_mb = 8\n"))()
    try:
        env.reset("train/answer")
        env.step(run(solve))
        flood = env.step(ToolCall("run", {"command": FLOOD, "timeout": 30})).observation.text
        assert "No space left on device" in flood and "[exit code 1]" in flood, flood
        counted = env.step(run("find . | wc -l")).observation.text
        assert int(counted.split()[0]) > 8 * FILES_PER_MB - 16, counted
        started = time.monotonic()
        result = env.step(ToolCall("submit", {}))
        assert (result.failure, result.reward) == (None, reward), result
        assert time.monotonic() - started < 30
        assert env.state().fields["verifier"]["note"] == ""  # type: ignore[index]
    finally:
        env.close()


def test_where_the_storage_cannot_be_capped_a_flooded_workspace_is_graded_0_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that is not root mounts no tmpfs and the agent's files are uncapped: the copy for the
    verifier stops past the number the storage would hold, and grades the flood 0, never a void."""
    monkeypatch.setattr(sandbox_module, "mount_tmpfs", lambda path, size, files: False)
    env = harbor_environment(make_task(tmp_path, toml_extra="[environment]\nstorage_mb = 1\n"))()
    try:
        env.reset("train/answer")
        assert env.sandbox is not None and not env.sandbox.work_capped
        flood = env.step(run(f"echo 42 > out.txt && mkdir flood && touch flood/{{1..{FILES_PER_MB}}} && echo made"))
        assert "made" in flood.observation.text, flood
        result = env.step(ToolCall("submit", {}))
        assert (result.failure, result.reward) == (None, 0.0), result
        note = env.state().fields["verifier"]["note"]  # type: ignore[index]
        limit = f"more than {FILES_PER_MB} files, directories and links (the sandbox's limit)"
        assert note == f"the workspace holds {limit}: its tests were not run", note
        assert play(env, "train/answer", "echo 42 > out.txt") == 1.0, "a workspace under the limit is graded"
    finally:
        env.close()


def test_a_copy_with_a_limit_stops_past_it_and_the_tests_copy_has_none(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "dir").mkdir(parents=True)
    for number in range(5):
        (source / "dir" / str(number)).touch()
    copy_tree(source, tmp_path / "exact", limit=6)  # the directory and its five files
    assert sorted(os.listdir(tmp_path / "exact" / "dir")) == ["0", "1", "2", "3", "4"]
    with pytest.raises(TooManyFilesError, match="more than 5 files"):
        copy_tree(source, tmp_path / "over", limit=5)


def test_a_sparse_file_is_copied_sparse_never_as_its_zeros(tmp_path: Path) -> None:
    """``truncate -s 200M big`` costs the agent nothing; copied byte for byte, a few such files filled
    the verifier's storage (the agent's other files were skipped, the tests had no room) and held
    that much of the host's memory outside every sandbox's limit."""
    source = tmp_path / "source"
    source.mkdir()
    size = 256 * 1024 * 1024
    with open(source / "big", "wb") as f:
        f.truncate(size)
        f.seek(size // 2)
        f.write(b"data in the middle")
    (source / "big").chmod(0o640)
    (source / "small.txt").write_bytes(b"x" * 5000)
    copy_tree(source, tmp_path / "copy")
    copied = tmp_path / "copy" / "big"
    assert copied.stat().st_size == size and copied.stat().st_mode & 0o777 == 0o640
    assert copied.stat().st_blocks * 512 < 1024 * 1024, "the holes must stay holes"
    with open(copied, "rb") as f:
        f.seek(size // 2 - 4)
        assert f.read(30) == b"\0" * 4 + b"data in the middle" + b"\0" * 8
    assert (tmp_path / "copy" / "small.txt").read_bytes() == b"x" * 5000


def test_a_hard_link_is_copied_as_a_link_never_as_another_copy(tmp_path: Path) -> None:
    """A file of 100 MB under a dozen names costs the agent 100 MB; copied once per name, it filled the
    verifier's storage (and the host's memory) and left the agent's other files out of the copy."""
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    (source / "data").write_bytes(b"d" * 10_000)
    for number in range(12):
        os.link(source / "data", source / "sub" / f"link{number}")
    (source / "alone").write_bytes(b"a")
    copy_tree(source, tmp_path / "copy")
    copied = tmp_path / "copy" / "data"
    assert copied.stat().st_nlink == 13 and copied.read_bytes() == b"d" * 10_000
    inodes = {(tmp_path / "copy" / "sub" / name).stat().st_ino for name in os.listdir(tmp_path / "copy" / "sub")}
    assert inodes == {copied.stat().st_ino}
    assert copied.stat().st_ino != (source / "data").stat().st_ino, "a copy, never the agent's own file"
    assert (tmp_path / "copy" / "alone").read_bytes() == b"a"


@pytest.mark.parametrize("workdir", ["/app", "/home/user"])
def test_an_agent_that_locks_itself_out_of_its_home_then_ends_its_shell_is_scored_never_void(
    tmp_path: Path, workdir: str
) -> None:
    """``chmod 000 ~; exit``: the next shell could not start in the home (for a task that works in
    ``/home/user``, the workspace mounted there), and the episode was void, as if the host had failed.
    The home's mode is given back at every start."""
    grade = f'#!/bin/bash\n[ "$(cat {workdir}/out.txt)" = 42 ] && echo 1 > /logs/verifier/reward.txt\n'
    named = f'[environment]\nworkdir = "{workdir}"\n'  # no WORKDIR: the named directory is mounted
    env = harbor_environment(make_task(tmp_path, dockerfile="FROM ubuntu:24.04\n", test=grade, toml_extra=named))()
    try:
        env.reset("train/answer")
        env.step(run("echo 42 > out.txt && chmod 000 /home/user"))
        ended = env.step(run("exit"))
        assert ended.failure is None and "a new one started" in ended.observation.text, ended
        again = env.step(run("pwd && ls -ld /home/user"))
        assert again.failure is None and again.observation.text.startswith(f"{workdir}\ndrwxr-xr-x"), again
        assert env.step(ToolCall("submit", {})).reward == 1.0
    finally:
        env.close()
