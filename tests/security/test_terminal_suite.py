"""A Harbor folder is data: a hostile suite writes and reads no host file, runs no code of its own
on the host, and cannot take over its own grading; an agent never sees any task's answers.

The suite's author controls every file of it: the Dockerfile's steps, links between its folders,
``task.toml``. Reading it and building a workspace from it happen on the host, for every episode.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from omnienv.core import EnvironmentFailure, load_environment
from omnienv.envs.terminal import HarborTaskError, harbor_environment, read_task
from tests.envs.test_terminal import make_task


def test_a_copy_through_a_link_an_earlier_step_planted_writes_no_host_file(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    dockerfile = f"FROM ubuntu:24.04\nWORKDIR /app\nRUN ln -s {host} /app/x\nCOPY app/keep.txt x/planted\n"
    env = harbor_environment(make_task(tmp_path / "suite", dockerfile=dockerfile))()
    try:
        with pytest.raises(EnvironmentFailure, match=r"COPY app/keep\.txt /app/x/planted exited"):
            env.reset("train/answer")
    finally:
        env.close()
    assert list(host.iterdir()) == []  # the copy ran in the sandbox, where the link leads nowhere


def test_a_link_to_a_folder_of_the_suite_is_checked_through(tmp_path: Path) -> None:
    """``environment/s -> ../../shared`` stays inside the suite; ``shared/key`` leads out of it."""
    key = tmp_path / "id_rsa"
    key.write_text("host key\n")
    suite = tmp_path / "suite"
    task = make_task(suite, dockerfile="FROM ubuntu:24.04\nWORKDIR /app\nCOPY s/key /app/key\n")
    (suite / "shared").mkdir()
    (suite / "shared" / "key").symlink_to(key)
    (task / "environment" / "s").symlink_to("../../shared")
    with pytest.raises(HarborTaskError, match=r"shared/key links to .*id_rsa, outside"):
        read_task(task, root=suite)
    loop = make_task(tmp_path / "loops")
    (loop / "environment" / "loop").symlink_to("loop")
    with pytest.raises(HarborTaskError, match="never ends"):
        read_task(loop)


def test_a_suites_task_toml_names_no_code_to_import(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    task = make_task(suite, toml_extra='[metadata.omnienv]\nenv = "planted:Env"\ntask = "x"\n')
    (suite / "planted.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    sys.path.insert(0, str(suite))
    try:
        with pytest.raises(Exception, match="not a registered one"):
            load_environment(str(task))
    finally:
        sys.path.remove(str(suite))
    assert not (tmp_path / "ran").exists()


def test_malformed_tasks_are_refused_one_by_one_naming_their_fault(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    make_task(suite, "good", split="test")
    broken = {
        "not-toml": ("[metadata\n", "not valid TOML"),
        "table": ('metadata = "oops"\n', "metadata must be a table"),
        "number": ('[verifier]\ntimeout_sec = "ten"\n', "timeout_sec must be a positive number"),
        # Past what the kernel's limits hold (every reset failed at prlimit, as the host's fault), none
        # at all (0.5 MB is 0), or a size that was read as the default.
        "forever": ("[agent]\ntimeout_sec = 1e300\n", r"timeout_sec must be a positive number, at most 1e\+09"),
        "huge": ("[environment]\nmemory_mb = 1e15\n", "memory_mb must be a positive number of at least 1"),
        "tiny": ("[environment]\nmemory_mb = 0.5\n", "memory_mb must be a positive number of at least 1"),
        "size": ('[environment]\nstorage = "lots"\n', 'storage must be a size such as "2G"'),
        # A NUL no process can be given: every reset or submit raised ValueError, a void episode.
        "nul": (
            '[verifier.env]\nKEY = "a\\u0000b"\n',
            r"holds a NUL character",
        ),
    }
    for name, (toml, _) in broken.items():
        (make_task(suite, name) / "task.toml").write_text(toml)
    (make_task(suite, "quote", dockerfile='FROM x\nWORKDIR /app\nCOPY "a /app/\n') / "task.toml").touch()
    (make_task(suite, "bytes") / "instruction.md").write_bytes(b"\xff\xfe\n")
    (make_task(suite, "nul-env", dockerfile="FROM x\nWORKDIR /app\nENV K=a\0b\n") / "task.toml").touch()
    make_task(suite, "nul-workdir", toml_extra='[environment]\nworkdir = "/app/\\u0000"\n')
    (make_task(suite, "unnamed-env", dockerfile="FROM x\nWORKDIR /app\nENV =x\n") / "task.toml").touch()
    tasks = harbor_environment(suite).harbor_tasks()
    assert sorted(tasks) == ["good"]
    for name, (_, why) in broken.items():
        with pytest.raises(HarborTaskError, match=why):
            read_task(suite / name)
    for name, why in (
        ("quote", "No closing quotation"),
        ("bytes", "UnicodeDecodeError"),
        ("nul-env", "its Dockerfile holds a NUL byte"),
        ("nul-workdir", "holds a NUL character"),
        ("unnamed-env", "the Dockerfile's ENV sets '' to 'x', no variable"),
    ):
        with pytest.raises(HarborTaskError, match=why):
            read_task(suite / name)


INSTALLED_UNDER_USR = """
import sys
from pathlib import Path
from omnienv.core import ToolCall, as_sync
from omnienv.envs.terminal import Terminal, harbor_environment
import omnienv
assert omnienv.__file__.startswith("/usr/local/share/"), omnienv.__file__
suite = Path(sys.argv[1])
for env_class, where in ((Terminal, "/usr/local/share/site"), (harbor_environment(suite), str(suite))):
    env = as_sync(env_class())
    try:
        env.reset(task=env_class.tasks(env_class.splits[0])[0], seed=0)
        look = f"find {where} -name solve.sh -o -name test.sh | head -3; echo listed"
        print(env.step(ToolCall("run", {"command": look})).observation.text, flush=True)
    finally:
        env.close()
"""


def test_an_installation_under_the_system_shows_the_agent_no_task_files(tmp_path: Path) -> None:
    """``pip install omnienv`` into the system's Python puts the shipped suite under ``/usr``, which
    every sandbox mounts; so may an operator's suite. Played here in a private mount namespace."""
    checkout = Path(__file__).resolve().parents[2]
    (tmp_path / "make_suite.py").write_text(
        f"import sys; sys.path.insert(0, {str(checkout)!r})\n"
        "from pathlib import Path\nfrom tests.envs.test_terminal import make_task\n"
        "make_task(Path('/usr/local/share/suites'))\n"
    )
    (tmp_path / "play.py").write_text(INSTALLED_UNDER_USR)
    python, site = shlex.quote(sys.executable), "PYTHONPATH=/usr/local/share/site"
    script = (
        "set -e; mount -t tmpfs -o size=16m omnienv-test /usr/local/share; "
        "mkdir /usr/local/share/site /usr/local/share/suites; "
        f"mount --bind {shlex.quote(str(checkout))} /usr/local/share/site; cd /; "
        f"{site} {python} {tmp_path / 'make_suite.py'}; "
        f"{site} {python} {tmp_path / 'play.py'} /usr/local/share/suites/answer"
    )
    ran = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.count("listed") == 2, ran.stdout
    assert "solve.sh" not in ran.stdout and "test.sh" not in ran.stdout, ran.stdout
