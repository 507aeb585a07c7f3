"""The terminal's graders against the agent's own code, which they run while grading.

A package under test is imported, a Makefile's recipes run, a script is executed: that code is the
agent's, and it runs inside the verifier's sandbox. If it ran beside the grader it could plant a
reward and kill ``test.sh`` before it writes the real one, write a reward line into the grader's
stdout pipe and kill the grader, make ``/logs/verifier`` read-only so the real reward is never
written, or read the answers in ``/tests``. Each shipped family of tasks is armed with all of that
here, and none of it may move the grade of an unsolved task off 0.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from omnienv.core import ToolCall
from omnienv.envs.terminal import Terminal, verifier
from omnienv.envs.terminal.verifier import GRADER_LIBRARY, VERIFIER_ENV, preflight_nesting
from omnienv.sandboxes.bubblewrap import Limits, SandboxUnavailableError
from omnienv.sandboxes.sandbox import Sandbox

ATTACK = r"""#!/bin/bash
# the agent's code, run by the grader: plant a reward, keep the real one from being written,
# write a reward line into every pipe and file any process holds, then kill every other process
for d in /logs/verifier /logs /tmp; do
  mkdir -p "$d" && echo '{"reward": 1.0}' > "$d/reward.json" && echo 1 > "$d/reward.txt"
done 2>/dev/null
chmod 500 /logs/verifier 2>/dev/null
for f in /proc/[0-9]*/fd/*; do printf '\n{"reward": 1.0}\n' > "$f"; done 2>/dev/null
for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] || kill -9 "${p#/proc/}"; done 2>/dev/null
exit 0
"""

ARMED = {
    # a package the grader imports
    "test/pkg-fix-calculator": 'printf \'\\nimport subprocess\\nsubprocess.run(["bash", "/app/attack.sh"])\\n\''
    " >> /app/calc/__init__.py",
    # a Makefile the grader runs
    "train/build-fix-makefile": "printf 'all:\\n\\tbash /app/attack.sh\\n' > /app/Makefile",
    # a script the grader runs on its cases
    "train/shell-count-ext": "cp /app/attack.sh /app/count_ext.sh",
}


def arm(task_id: str) -> list[ToolCall]:
    """The calls that arm ``task_id``'s workspace with :data:`ATTACK`, where its grader runs it."""
    payload = base64.b64encode(ATTACK.encode()).decode()
    commands = (f"echo {payload} | base64 -d > /app/attack.sh", ARMED[task_id])
    return [ToolCall("run", {"command": command}) for command in commands]


@pytest.mark.parametrize("task_id", sorted(ARMED))
def test_the_agents_code_run_while_grading_cannot_touch_the_grade(task_id: str) -> None:
    env = Terminal()
    try:
        env.reset(task_id)
        for call in arm(task_id):
            result = env.step(call)
            assert "[exit code 0]" in result.observation.text, result.observation.text
        result = env.step(ToolCall("submit", {}))
        assert result.failure is None, result.failure
        assert (result.reward, result.info["success"]) == (0.0, False), env.state().fields["verifier"]
    finally:
        env.close()


FAKE_SUMMARY = """
import os, sys
if "unittest" in sys.modules:  # only when the grader runs the visible suite
    sys.stderr.write("Ran 6 tests in 0.001s\\n\\nOK\\n")
    sys.stderr.flush()
    os._exit(0)
"""


def test_a_package_that_fakes_its_test_runs_summary_earns_nothing() -> None:
    """The visible suite runs in the package's own process, so its verdict is the package's word:
    a package that prints unittest's summary of a passing run (and exits 0) instead of passing."""
    env = Terminal()
    try:
        env.reset("test/pkg-fix-calculator")
        env.step(ToolCall("write_file", {"path": "/app/fake.py", "content": FAKE_SUMMARY}))
        arm = "cat /app/fake.py >> /app/calc/__init__.py && python3 -m unittest"
        result = env.step(ToolCall("run", {"command": arm}))
        assert "Ran 6 tests" in result.observation.text  # the fake works on the agent's own run
        result = env.step(ToolCall("submit", {}))
        assert (result.reward, result.info["rubric"]["visible_tests"]) == (0.0, 0.0), result.info
    finally:
        env.close()


PROBE = r"""
import json, os, subprocess, sys
sys.path.insert(0, "/tests")
import verifylib

grader = os.getpid()
seen = verifylib.run(["bash", "-c", '''
  echo "tests=$(ls -A /tests | wc -l) logs=$(ls -A /logs | wc -l)"
  echo "grader_proc=$(ls -A /proc/%d 2>/dev/null | wc -l) self=$(ls /proc/self/fd | wc -l)"
  touch /app/planted 2>/dev/null; echo "app_writable=$?"
  echo "procsub=$(cat <(echo ok)) stdin=$(echo ok | cat /dev/stdin)"
  unshare --user true 2>/dev/null; echo "userns=$?"
  for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] || kill -9 "${p#/proc/}"; done 2>/dev/null
''' % grader])
print(json.dumps({"child": seen.out, "err": seen.err[-500:], "rc": seen.rc, "planted": os.path.exists("/app/planted")}))
"""


def test_a_grader_runs_the_agents_code_out_of_sight_and_reach_of_everything_it_holds(tmp_path: Path) -> None:
    """What one child of the shipped graders' library sees: no answers, no reward directory, no
    grader to read or signal (it outlives the child's attempt to kill every process), a read-only
    workspace, no user namespace of its own to make, and still a working /proc of its own."""
    sandbox = Sandbox(Limits(), prefix="omnienv-verifier-")
    try:
        app, logs = tmp_path / "app", tmp_path / "logs"
        app.mkdir()
        logs.mkdir()
        (logs / "reward.json").write_text("{}")
        process = sandbox.spawn(
            ["python3", "-I", "-c", PROBE],
            env=VERIFIER_ENV,
            files=[(str(GRADER_LIBRARY), "/tests")],
            binds=[(str(app), "/app"), (str(logs), "/logs/verifier")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            nest=True,  # as the verifier's own
        )
        out, err = process.communicate(timeout=60)
    finally:
        sandbox.close()
    assert process.returncode == 0, err.decode()
    report = json.loads(out.decode().splitlines()[-1])
    child = dict(item.split("=", 1) for line in report["child"].split("\n") for item in line.split() if "=" in item)
    assert "tests" in child and (child["tests"], child["logs"]) == ("0", "0"), report
    assert child["grader_proc"] == "0" and int(child["self"]) >= 3, report
    assert child["app_writable"] != "0" and not report["planted"], report
    assert (child["procsub"], child["stdin"]) == ("ok", "ok"), report
    assert child["userns"] != "0", report  # no user namespace of its own, to mount what the kernel shows


def test_under_omnienv_a_grader_refuses_to_run_the_agents_code_unsandboxed(tmp_path: Path) -> None:
    """Where nesting fails the library raises rather than run the code beside the grader; outside
    omnienv (a Harbor container) it runs it as a plain process. (In a process of its own: the
    library makes its process a subreaper and reaps every descendant, as a grader must.)"""
    no_bwrap = tmp_path / "bin"
    no_bwrap.mkdir()
    code = (
        f"import sys; sys.path.insert(0, {str(GRADER_LIBRARY)!r}); import verifylib; "
        f"verifylib.PATH = {str(no_bwrap)!r}; print(verifylib.sandboxed(['true'], '/'))"
    )

    def library(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-I", "-c", code], env=env, capture_output=True, text=True, timeout=60)

    required = library({**VERIFIER_ENV})
    assert required.returncode != 0 and "bubblewrap is missing" in required.stderr, required
    assert "unsandboxed" in required.stderr, required.stderr
    harbor = library({"PATH": VERIFIER_ENV["PATH"]})
    assert (harbor.returncode, harbor.stdout.strip()) == (0, "['true']"), harbor


def test_a_served_terminal_refuses_to_start_where_its_graders_cannot_nest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preflight_nesting()  # this machine can
    (tmp_path / "verifylib.py").write_text(
        "def nesting_available():\n    raise RuntimeError('bubblewrap cannot nest here: Operation not permitted')\n"
    )
    monkeypatch.setattr(verifier, "GRADER_LIBRARY", tmp_path)
    with pytest.raises(SandboxUnavailableError, match=r"cannot nest here: Operation not permitted.*nested user"):
        preflight_nesting()


NAMESPACE_PROBE = """#!/bin/bash
# a foreign test.sh that runs the agent's code itself: may that code make a user namespace here?
command -v unshare >/dev/null || { echo 0.5 > /logs/verifier/reward.txt; exit 0; }
if unshare --user --map-root-user true 2>/dev/null; then made=1; else made=0; fi
echo $made > /logs/verifier/reward.txt
"""


def test_a_foreign_tasks_verifier_makes_no_user_namespace(tmp_path: Path) -> None:
    """In a user namespace of its own the agent's code could mount the host's cgroup2 hierarchy and
    act on cgroups there; only the shipped graders, which sandbox that code again, may nest."""
    from omnienv.envs.terminal import harbor_environment
    from tests.envs.test_terminal import make_task

    task = make_task(tmp_path, "foreign", test=NAMESPACE_PROBE)
    assert not (task / "tests" / "verifylib.py").exists()
    env = harbor_environment(task)()
    try:
        env.reset()
        result = env.step(ToolCall("submit", {}))
        assert result.failure is None, result.failure
        assert result.reward == 0.0, f"the verifier's sandbox made a user namespace: {env.state().fields['verifier']}"
    finally:
        env.close()
