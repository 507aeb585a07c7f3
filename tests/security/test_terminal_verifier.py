"""The verifier's own sandbox against what the agent left: settings for the grader's programs.

The verifier runs ``test.sh`` over a copy of the agent's workspace. Whatever of that copy the
grader's programs read as their own settings would let the agent's files run in the grader: a
task working in the sandbox's home (``/home/user``) once made the agent's ``~/.gitconfig`` and
Python user site the verifier's own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omnienv.core import ToolCall
from omnienv.envs.terminal import harbor_environment
from tests.envs.test_terminal import make_task
from tests.security.test_terminal_workspace import AS_OWNER_ONLY

GRADE_IN_HOME = """#!/bin/bash
python3 /tests/grade.py
git add -A && git status --short >/dev/null
"""
GRADE_PY = """import pathlib
out = pathlib.Path("/home/user/out.txt")
ok = out.is_file() and out.read_text().strip() == "42"
pathlib.Path("/logs/verifier/reward.txt").write_text("1" if ok else "0")
"""
PLANT = "echo 1 > /logs/verifier/reward.txt"
PLANT_HOME = (  # a .pth that plants the reward and ends the grader; a git hook of the global config
    'site=$(python3 -c "import site; print(site.getusersitepackages())") && mkdir -p "$site" && '
    f'echo \'import os; os.system("{PLANT}"); os._exit(0)\' > "$site/grade.pth" && git init -q && '
    f"printf '[core]\\n\\tfsmonitor = \"{PLANT}; echo\"\\n' > ~/.gitconfig"
)


def test_a_task_working_in_the_home_gives_the_grader_none_of_the_agents_settings(tmp_path: Path) -> None:
    task = make_task(tmp_path, dockerfile="FROM ubuntu:24.04\nWORKDIR /home/user\n", test=GRADE_IN_HOME)
    (task / "tests" / "grade.py").write_text(GRADE_PY)
    env = harbor_environment(task)()
    try:
        scores = []
        for commands in ([PLANT_HOME], [PLANT_HOME, "echo 42 > out.txt"]):
            env.reset("train/answer")
            for command in commands:
                assert "[exit code 0]" in env.step(ToolCall("run", {"command": command})).observation.text
            result = env.step(ToolCall("submit", {}))
            assert result.failure is None, result
            scores.append(result.reward)
        assert scores == [0.0, 1.0], "the agent's home settings must not run in the grader"
    finally:
        env.close()


SEARCH_PATHS = "FROM ubuntu:24.04\nWORKDIR /app\nENV PATH=/app/bin:$PATH PYTHONPATH=/app\n"
GRADE_JSON = """import json, pathlib
ok = json.loads(pathlib.Path("/app/out.json").read_text() or "null") == {"x": 42}
pathlib.Path("/logs/verifier/reward.txt").write_text("1" if ok else "0")
"""
SHADOW = (  # a json.py for the grader, and a prlimit, env and bash for whatever starts it by PATH
    "printf 'def loads(text):\\n    return {\"x\": 42}\\n' > json.py && touch out.json && mkdir bin && "
    f"for p in prlimit env bash; do printf '#!/bin/sh\\n{PLANT}\\n' > bin/$p; done && chmod +x bin/*"
)


@pytest.mark.parametrize("reset", ["", "unset PYTHONPATH; export PATH=/usr/bin:/bin\n"], ids=["as-is", "reset"])
def test_a_search_path_into_the_workspace_is_named_on_reading(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, reset: str
) -> None:
    """The verifier runs with the task's ENV: ``PYTHONPATH=/app`` makes the agent's json.py what even
    ``python3 /tests/grade.py`` imports. Reading the task names each such variable with the fix, and
    the fixed test.sh is not fooled: the verifier starts it with programs of its own, never by the
    task's PATH. (``$PATH`` is the image's: the shell starts, its tools found.)"""
    task = make_task(tmp_path, dockerfile=SEARCH_PATHS, test=f"#!/bin/bash\n{reset}python3 /tests/grade.py\n")
    (task / "tests" / "grade.py").write_text(GRADE_JSON)
    env = harbor_environment(task)()
    try:
        scores = []
        for command in (SHADOW, "echo '{\"x\": 42}' > out.json"):
            env.reset("train/answer")
            assert "[exit code 0]" in env.step(ToolCall("run", {"command": command})).observation.text
            scores.append(env.step(ToolCall("submit", {})).reward)
    finally:
        env.close()
    assert scores == ([1.0, 1.0] if reset == "" else [0.0, 1.0])
    for name, fix in (("PYTHONPATH=/app leads to /app", "unset PYTHONPATH"), ("PATH=/app/bin:", "export PATH")):
        assert f"'answer': ENV {name}" in caplog.text and fix in caplog.text, caplog.text


PLAY_UNREADABLE_TESTS = """
import json, sys
from pathlib import Path
from omnienv.core import ToolCall
from omnienv.envs.terminal import harbor_environment
env = harbor_environment(Path(sys.argv[1]))()
try:
    env.reset("train/answer")
    env.step(ToolCall("run", {"command": "echo 42 > out.txt"}))
    (Path(sys.argv[1]) / "tests" / "grade.py").chmod(0)  # the host can no longer read its own tests
    result = env.step(ToolCall("submit", {}))
    print(json.dumps({"reward": result.reward, "failure": result.failure.kind if result.failure else None}))
finally:
    env.close()
"""


def test_tests_the_host_cannot_copy_are_its_failure_never_a_score(tmp_path: Path) -> None:
    """A file of the task's tests that the host cannot copy for the verifier (unreadable, a full
    disk) left a verifier without it, and the workspace graded 0: the host failed, so the episode
    is flagged."""
    task = make_task(tmp_path, test="#!/bin/bash\npython3 /tests/grade.py\n")
    (task / "tests" / "grade.py").write_text(GRADE_PY.replace("/home/user/", "/app/"))
    child = subprocess.run(
        [*AS_OWNER_ONLY, sys.executable, "-c", PLAY_UNREADABLE_TESTS, str(task)],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-2000:]
    assert json.loads(child.stdout.splitlines()[-1]) == {"reward": 0.0, "failure": "env_error"}, child.stderr[-2000:]


COMPARE = """#!/bin/bash
r=0
cmp -s /app/output.txt /tests/expected_output.txt && [ "$(/app/bin/py -c 'print(6 * 7)')" = 42 ] && r=1
echo $r > /logs/verifier/reward.txt
"""
VENV_LIKE = "mkdir -p bin lib && ln -s /usr/bin/python3 lib/python && ln -s ../lib/python bin/py && "


@pytest.mark.parametrize(
    "link",
    [
        "/tests/expected_output.txt",
        "../tests/expected_output.txt",
        "/proc/self/root/tests/expected_output.txt",
        "/usr/../tests/expected_output.txt",
        "bin/up/../tests/expected_output.txt",  # through a link of the workspace's own, then ..
    ],
)
def test_a_link_to_the_verifiers_own_files_is_not_in_its_copy(tmp_path: Path, link: str) -> None:
    """In the agent's sandbox ``output.txt -> /tests/expected_output.txt`` leads nowhere; in the
    verifier's it was the answer, and a test that compares the two passed. Links into the
    workspace and the host's system (a virtualenv's python) are kept."""
    task = make_task(tmp_path, test=COMPARE)
    (task / "tests" / "expected_output.txt").write_text("the answer\n")
    env = harbor_environment(task)()
    try:
        honest = play(env, VENV_LIKE + "echo 'the answer' > output.txt")
        hostile = play(env, VENV_LIKE + f"ln -s .. bin/up && ln -s {link} output.txt")
    finally:
        env.close()
    assert (honest, hostile) == (1.0, 0.0)


def play(env: Any, command: str) -> float:
    env.reset("train/answer")
    assert "[exit code 0]" in env.step(ToolCall("run", {"command": command})).observation.text
    result = env.step(ToolCall("submit", {}))
    assert result.failure is None, result
    return float(result.reward)
