"""The terminal environment over Harbor tasks: reading tasks, the tools, and a verifier the agent cannot game."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from omnienv.client import WebSocketClient
from omnienv.core import (
    EnvironmentFailure,
    Task,
    TaskError,
    ToolCall,
    UnknownEnvironmentError,
    check_env,
    load_environment,
)
from omnienv.envs.terminal import HarborTaskError, Terminal, find_tasks, harbor_environment, read_task
from omnienv.envs.terminal.hazards import verifier_hazards
from omnienv.envs.terminal.oracle import solution_calls
from tests.server.conftest import serve

__all__ = ["serve"]

GRADE = """#!/bin/bash
score=0
[ "$(cat /app/out.txt 2>/dev/null)" = "42" ] && score=$((score+1))
[ "$(cat /app/keep.txt 2>/dev/null)" = "keep" ] && [ -f /app/out.txt ] && score=$((score+1))
printf '{"reward": %s, "checks": %s}' "$(python3 -I -c "print($score/2)")" "$score" > /logs/verifier/reward.json
"""


def make_task(
    root: Path,
    name: str = "answer",
    *,
    dockerfile: str = "FROM ubuntu:24.04\nWORKDIR /app\nCOPY app/ /app/\n",
    test: str = GRADE,
    solve: str = "echo 42 > out.txt\n",
    split: str = "train",
    toml_extra: str = "",
) -> Path:
    task = root / name
    for part in ("environment/app", "tests", "solution"):
        (task / part).mkdir(parents=True, exist_ok=True)
    (task / "instruction.md").write_text(f"Task {name}: write 42 to /app/out.txt and leave keep.txt alone.\n")
    (task / "task.toml").write_text(
        f'version = "1.0"\n[metadata]\nsplit = "{split}"\ncategory = "demo"\n[verifier]\ntimeout_sec = 20\n'
        f"[agent]\ntimeout_sec = 60\n{toml_extra}"
    )
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    (task / "environment" / "app" / "keep.txt").write_text("keep\n")
    (task / "tests" / "test.sh").write_text(test)
    (task / "solution" / "solve.sh").write_text(solve)
    return task


def play(env: Terminal, task_id: str, *commands: str) -> float:
    env.reset(task_id)
    for command in commands:
        env.step(ToolCall("run", {"command": command}))
    result = env.step(ToolCall("submit", {}))
    assert result.done and result.failure is None, result
    return result.reward


# -- reading tasks -------------------------------------------------------------------------------


def test_a_dockerfile_is_honoured_container_free_or_refused_naming_the_line(tmp_path: Path) -> None:
    docker = (
        "FROM ubuntu:24.04\nARG NAME=data\nWORKDIR /app\nCOPY app/ /app/\nENV GREETING=hello \\\n    OTHER=x\n"
        'WORKDIR /app/src\nRUN git init -q && printf \'%s\' "$GREETING" > $NAME.txt\nEXPOSE 80\nCMD ["bash"]\n'
    )
    apt = "RUN apt-get update && apt-get install -y --no-install-recommends git python3=3.11* && apt-get clean\n"
    docker = docker.replace("ARG NAME", apt + "ARG NAME")  # met by the host's own packages: no step
    task = read_task(make_task(tmp_path, dockerfile=docker, toml_extra="[environment]\nmemory = '1G'\ncpus = 2\n"))
    assert (task.mount, task.workdir, task.env) == ("/app", "/app/src", {"GREETING": "hello", "OTHER": "x"})
    assert [step.kind for step in task.steps] == ["copy", "run"] and "data.txt" in task.steps[1].command
    assert (task.memory_mb, task.cpus, task.split, task.verifier_timeout) == (1024, 2.0, "train", 20.0)
    refused = {
        "RUN apt-get update && apt-get install -y omnienv-no-such-package": "packages this host lacks",
        "RUN apt-get install -y git && pip install requests": "installs software over the network",
        "COPY app/keep.txt /etc/keep.txt": "outside the working directory",
        "COPY --from=builder /out /app/out": "copies from another image",
        "ADD https://example.com/x.tgz /app/": "downloads a file",
        "VOLUME /data\nONBUILD RUN true\nFOO bar": "uses FOO",
    }
    for line, why in refused.items():
        bad = make_task(tmp_path, "bad", dockerfile=f"FROM ubuntu:24.04\nWORKDIR /app\n{line}\n")
        with pytest.raises(HarborTaskError, match="needs a container") as caught:
            read_task(bad)
        assert why in caught.value.message and "Dockerfile line" in caught.value.message, caught.value.message
    (bad / "environment" / "docker-compose.yaml").write_text("services: {}\n")
    with pytest.raises(HarborTaskError, match="docker-compose"):
        read_task(bad)
    (bad / "tests" / "test.sh").unlink()
    with pytest.raises(HarborTaskError, match=r"no tests/test\.sh"):
        read_task(bad)


def test_a_task_whose_starting_state_is_a_prebuilt_image_alone_is_refused(tmp_path: Path) -> None:
    """Harbor starts such a task from its ``docker_image``; with no Dockerfile to lay that state out,
    the sandbox would give the agent an empty workspace and every episode 0, never a word why."""
    task = make_task(tmp_path, toml_extra='[environment]\ndocker_image = "ghcr.io/org/task:1"\n')
    assert read_task(task).mount == "/app", "with its Dockerfile, the task is read from that"
    (task / "environment" / "Dockerfile").unlink()
    with pytest.raises(
        HarborTaskError, match=r"needs a container: its starting state is the image 'ghcr.io/org/task:1'"
    ):
        read_task(task)


def test_a_suite_keeps_its_runnable_tasks_and_names_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    make_task(tmp_path / "suite" / "easy", "one")
    make_task(tmp_path / "suite", "two", split="test")
    make_task(tmp_path / "suite", "apt", dockerfile="FROM x\nRUN apt-get install -y cowsay\n")
    tasks = find_tasks(tmp_path / "suite")
    assert [task.id for task in tasks] == ["easy/one", "two"]
    assert "'apt' needs a container" in caplog.text
    cls = load_environment(str(tmp_path / "suite"))
    assert cls.splits == ("train", "test") and [t.id for t in cls.tasks("train")] == ["train/easy/one"]
    with pytest.raises(UnknownEnvironmentError, match="'apt' needs a container"):
        load_environment(str(tmp_path / "suite" / "apt"))
    with pytest.raises(UnknownEnvironmentError, match="no runnable Harbor task"):
        load_environment(str(tmp_path / "suite" / "easy" / "one" / "tests"))


# -- the tools and the verifier ------------------------------------------------------------------


def test_the_working_directory_comes_from_the_dockerfile_or_task_toml_and_never_hides_the_system(
    tmp_path: Path,
) -> None:
    def task_with(dockerfile: str, workdir: str | None = None) -> Path:
        extra = f'[environment]\nworkdir = "{workdir}"\n' if workdir else ""
        return make_task(tmp_path, "wd", dockerfile=f"FROM ubuntu:24.04\n{dockerfile}", toml_extra=extra)

    assert (read_task(task_with("", "/srv/work")).mount, read_task(task_with("", "/srv/work")).workdir) == (
        "/srv/work",
        "/srv/work",
    )
    nested = read_task(task_with("WORKDIR /app\nWORKDIR sub/../src\n", "/app/src/"))
    assert (nested.mount, nested.workdir) == ("/app", "/app/src")
    refused = {
        ("WORKDIR /\n", None): "works in or over /, where the sandbox mounts the host's system",
        ("WORKDIR /app/../usr/local/app\n", None): "works in or over /usr, where",
        ("WORKDIR /tests\n", None): "works in or over /tests, where",
        ("WORKDIR /opt\n", None): "works in or over /opt/omnienv, where",  # over the verifier's tools
        ("WORKDIR /home\n", None): "works in or over /home/user, where",  # over the sandbox's home
        ("", "/opt"): "[environment] workdir /opt is in or over /opt/omnienv, where",
        ("", "/etc/app"): "[environment] workdir /etc/app is in or over /etc, where",
        ("WORKDIR /app\nCOPY app/keep.txt ../etc/x\n", None): "writes outside the working directory /app",
        ("WORKDIR /app\nCOPY app/keep.txt /app/../../tmp/x\n", None): "writes outside the working directory /app",
        ("WORKDIR /app\n", "/app/../srv"): "[environment] workdir /srv is outside the working directory /app",
    }
    for (dockerfile, workdir), why in refused.items():
        with pytest.raises(HarborTaskError, match="needs a container") as caught:
            read_task(task_with(dockerfile, workdir))
        assert why in caught.value.message, caught.value.message


def test_a_multi_step_task_is_refused_as_one_task_not_served_step_by_step(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Harbor's multi-step layout (``steps/<name>/`` with an instruction and tests each, run in order
    in one environment) read step by step would start each step from an empty workspace."""
    suite = tmp_path / "suite"
    make_task(suite, "single")
    multi = suite / "multi"
    for step in ("scaffold", "implement"):
        make_task(multi / "steps", step)
    (multi / "environment").mkdir()
    (multi / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (multi / "task.toml").write_text('[[steps]]\nname = "scaffold"\n[[steps]]\nname = "implement"\n')
    assert [task.id for task in find_tasks(suite)] == ["single"]
    assert caplog.text.count("multi-step Harbor task") == 1, caplog.text
    for path in (multi, multi / "steps" / "implement"):
        with pytest.raises(HarborTaskError, match=r"'multi' is a multi-step Harbor task .*\[\[steps\]\]"):
            read_task(path)
    with pytest.raises(UnknownEnvironmentError, match="multi-step"):
        load_environment(str(multi))


def test_tools_work_in_the_sandbox_and_the_verifier_grades_with_named_rewards(tmp_path: Path) -> None:
    env = harbor_environment(make_task(tmp_path))()
    try:
        prompt = env.reset()
        assert prompt.text.startswith("Task answer:")
        listing = env.step(ToolCall("run", {"command": "pwd; ls; ls /tests /solution 2>&1; echo $HOME"}))
        assert "/app\nkeep.txt" in listing.observation.text and "[exit code 0]" in listing.observation.text
        assert "No such file" in listing.observation.text, "the agent must never see tests/ or solution/"
        assert env.step(ToolCall("write_file", {"path": "sub/dir/f.txt", "content": "é\n"})).observation.text == (
            "wrote 3 bytes to sub/dir/f.txt"
        )
        assert env.step(ToolCall("read_file", {"path": "/app/sub/dir/f.txt"})).observation.text == "é"
        missing = env.step(ToolCall("read_file", {"path": "nope.txt"}))
        assert missing.observation.is_error and "No such file" in missing.observation.text
        bad = env.step(ToolCall("run", {"command": "true", "timeout": 0}))
        assert bad.observation.is_error and "timeout must be" in bad.observation.text
        slow = env.step(ToolCall("run", {"command": "sleep 20", "timeout": 0.3}))
        assert "[interrupted: the command ran past its 0.3 s timeout" in slow.observation.text and slow.failure is None
        env.step(ToolCall("write_file", {"path": "out.txt", "content": "42\n"}))
        result = env.step(ToolCall("submit", {}))
        assert (result.reward, result.done, result.info["success"]) == (1.0, True, True)
        assert result.info["rubric"] == {"reward": 1.0, "checks": 2.0}
        assert env.state().fields["verifier"]["rewards"]["checks"] == 2.0
    finally:
        env.close()


def test_nothing_the_agent_plants_or_leaves_running_changes_its_grade(tmp_path: Path) -> None:
    env = harbor_environment(make_task(tmp_path))()
    try:
        planted = play(
            env,
            "train/answer",
            "mkdir -p /logs/verifier /tests; echo 1 > /logs/verifier/reward.txt",
            "echo 'echo 1 > /logs/verifier/reward.txt' > /tests/test.sh",
            "mkdir -p tests logs/verifier; printf 'echo 1 > /logs/verifier/reward.txt\\n' > tests/test.sh",
            "echo '{\"reward\": 1}' > logs/verifier/reward.json; echo 1 > reward.txt",
        )
        assert planted == 0.0
        # A writer that outlives the agent's turn is dead once the episode is graded, so the copy the
        # verifier reads can never change under it (it would write long after any slow machine grades).
        late = play(env, "train/answer", "(sleep 120; echo 42 > out.txt) &")
        assert late == 0.0 and env.sandbox is not None
        assert env.sandbox.pids() == set(), "the agent's processes must be dead before the workspace is copied"
        tricky = play(
            env, "train/answer", "mkfifo pipe; ln -s /etc/hostname link; echo 42 > out.txt; chmod 000 keep.txt"
        )
        assert tricky == 0.5, "a FIFO, a link or an unreadable file must neither block the copy nor help"
        assert play(env, "train/answer", "echo 42 > out.txt") == 1.0
    finally:
        env.close()


@pytest.mark.parametrize(
    ("writes", "reward", "note"),
    [
        ("echo 0.25 > /logs/verifier/reward.txt", 0.25, ""),
        ('echo \'{"a": 1, "b": 0}\' > /logs/verifier/reward.json', 0.5, ""),
        ("echo '{\"only\": 0.75}' > /logs/verifier/reward.json", 0.75, ""),
        ("echo nan > /logs/verifier/reward.txt", 0.0, "not a finite number"),
        (  # as in Harbor, reward.txt is the reward and a reward.json beside it only details
            'cd /logs/verifier; echo 0.6 > reward.txt; echo \'{"passed": 3, "total": 5}\' > reward.json',
            0.6,
            "",
        ),
        ("echo '[1]' > /logs/verifier/reward.json", 0.0, "not an object"),
        ("echo {bad > /logs/verifier/reward.json", 0.0, "not JSON"),
        ("python3 -Ic 'print(chr(91) * 30000)' > /logs/verifier/reward.json", 0.0, "not JSON"),  # nested deep
        ("python3 -Ic 'print(10**400)' > /logs/verifier/reward.json", 0.0, "no finite reward"),  # no float holds it
        ('echo \'{"a": 1, "b": NaN}\' > /logs/verifier/reward.json', 0.0, "no finite reward"),  # their mean
        # A metric beside the reward that is no number (0/0) leaves the reward as it is.
        ('echo \'{"reward": 0.8, "coverage": NaN}\' > /logs/verifier/reward.json', 0.8, "coverage not finite"),
        ("ln -s /etc/passwd /logs/verifier/reward.txt", 0.0, "wrote no reward"),
        ("true", 0.0, "wrote no reward"),
        ("sleep 30", 0.0, "ran over its 1 s"),
    ],
)
def test_what_the_verifier_writes_is_read_strictly(tmp_path: Path, writes: str, reward: float, note: str) -> None:
    task = make_task(tmp_path, test=f"#!/bin/bash\n{writes}\n", toml_extra="")
    (task / "task.toml").write_text((task / "task.toml").read_text().replace("timeout_sec = 20", "timeout_sec = 1"))
    env = harbor_environment(task)()
    try:
        assert play(env, "train/answer") == reward
        assert note in env.state().fields["verifier"]["note"]
    finally:
        env.close()


TB2_VERIFIER = """#!/bin/bash
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
uvx -p 3.13 -w pytest==8.4.1 pytest /tests/test_outputs.py -rA
"""


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (TB2_VERIFIER, "line 5 (curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh) downloads from astral.sh"),
        ("pip3 install pytest==8.4.1 && python3 -m pytest /tests", "(pip3 install)"),
        (
            "python3 -m pip install \\\n  -r /tests/requirements.txt",
            "over the network (python3 -m pip install)",
        ),
        ("cd /tmp && git clone git@github.com:org/repo.git", "downloads from github.com"),
        ("npx jest /tests", "over the network (npx)"),
        (
            "sudo apt-get install -y bash omnienv-no-such-package",
            "installs packages this host lacks (omnienv-no-such-package)",
        ),
        ("curl -sf http://localhost:8000/health && wget -qO- http://127.0.0.1:8000/ http://[::1]:8000/", None),
        ("apt-get update; apt-get install -y git bash; pip install --no-index /app/dist/*.whl", None),
        ("# pip install pytest (done in the image)\ngit -C /app log --oneline", None),
    ],
    ids=["terminal-bench", "pip", "pip-continued", "git-clone", "npx", "apt-missing", "loopback", "offline", "comment"],
)
def test_a_verifier_that_needs_the_network_is_refused_naming_its_line(
    tmp_path: Path, line: str, why: str | None
) -> None:
    """The verifier runs with no network: a test.sh that fetches its tools would grade every episode 0."""
    task = make_task(tmp_path, test=f"#!/bin/bash\n{line}\necho 1 > /logs/verifier/reward.txt\n")
    if why is None:
        assert read_task(task).id == "answer"
        return
    with pytest.raises(HarborTaskError, match=r"needs a container: tests/test\.sh line") as caught:
        read_task(task)
    assert why in caught.value.message and "no network" in caught.value.message, caught.value.message


def test_a_verifier_that_installs_what_the_host_has_runs_set_e_and_all(tmp_path: Path) -> None:
    """As a Dockerfile's ``apt-get install`` of the host's packages is met at setup, a test.sh's is met
    in the verifier, which has no network and a read-only system: ``apt-get`` there does nothing and
    succeeds, or fails plainly for what it cannot do."""
    verifier = (
        "#!/bin/bash\nset -euo pipefail\napt-get update\napt-get install -y --no-install-recommends git bash\n"
        "DEBIAN_FRONTEND=noninteractive apt -qq -y install git && apt-get clean\n"
        "if apt-get purge -y git 2>/logs/verifier/purge.txt; then exit 1; fi\n"
        'grep -q "not available here" /logs/verifier/purge.txt\n'
        'solved=0; [ "$(cat /app/out.txt 2>/dev/null)" = "42" ] && solved=1\n'
        "echo $solved > /logs/verifier/reward.txt\n"
    )
    env = harbor_environment(make_task(tmp_path, test=verifier))()
    try:
        assert play(env, "train/answer", "echo 42 > out.txt") == 1.0, env.state().fields
        assert play(env, "train/answer") == 0.0
        assert env.state().fields["verifier"]["note"] == ""
    finally:
        env.close()


def test_task_toml_env_reaches_the_verifier_and_the_oracle_and_never_the_agent(tmp_path: Path) -> None:
    verifier = (
        '#!/bin/bash\n[ "$(cat /app/out.txt)" = "$EXPECTED" ] && r=1 || r=0\necho $r > /logs/verifier/reward.txt\n'
    )
    tables = '[verifier.env]\nEXPECTED = "forty-two"\n[solution.env]\nANSWER = "forty-two"\n'
    task = make_task(tmp_path, test=verifier, solve='echo "$ANSWER" > out.txt\n', toml_extra=tables)
    assert (read_task(task).verifier_env, read_task(task).solution_env) == (
        {"EXPECTED": "forty-two"},
        {"ANSWER": "forty-two"},
    )
    env = harbor_environment(task)()
    try:
        env.reset("train/answer")
        seen = env.step(ToolCall("run", {"command": 'echo "[$EXPECTED$ANSWER]"; echo "$EXPECTED" > out.txt'}))
        assert "[]" in seen.observation.text, "task.toml's env is the verifier's and the oracle's, not the agent's"
        assert env.step(ToolCall("submit", {})).reward == 0.0
        env.reset("train/answer")
        results = [env.step(call) for call in solution_calls(read_task(task))]
        assert results[-1].reward == 1.0, results[-1]
    finally:
        env.close()
    for bad, why in [
        ('KEY = "${OPENAI_API_KEY}"', "reads a variable of the host"),
        ('"A-B" = "1"', "no variable name"),
    ]:
        (task / "task.toml").write_text(
            (task / "task.toml").read_text().split("[verifier.env]")[0] + f"[verifier.env]\n{bad}\n"
        )
        with pytest.raises(HarborTaskError, match=why):
            read_task(task)


JSON_CHECK = """#!/bin/bash
cd /app
if python3 {flags}-c 'import json; assert json.load(open("out.json"))["x"] == 42'; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""


@pytest.mark.parametrize("flags", ["", "-I "], ids=["python3 -c", "python3 -I -c"])
def test_a_verifier_that_lets_the_agents_modules_shadow_its_own_is_named_on_reading(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, flags: str
) -> None:
    """``python3 -c`` from the workspace imports the agent's json.py before the standard library's:
    reading such a task warns with the line and the fix, and the fixed line is not fooled."""
    task = make_task(tmp_path, test=JSON_CHECK.format(flags=flags))
    env = harbor_environment(task)()
    try:
        shadow = "printf 'def load(f):\\n    return {\"x\": 42}\\n' > json.py && echo '{}' > out.json"
        fooled = play(env, "train/answer", shadow)
        honest = play(env, "train/answer", "echo '{\"x\": 42}' > out.json")
    finally:
        env.close()
    warned = "test.sh line 3 runs 'python3 -c' from the working directory" in caplog.text
    assert (fooled, honest, warned) == ((1.0, 1.0, True) if flags == "" else (0.0, 1.0, False)), caplog.text
    if warned:
        assert "'answer'" in caplog.text and "python3 -I -c" in caplog.text


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("python3 -m pytest /tests/test_outputs.py -q", "python3 -m"),
        ("if python3 -Bc 'import x'; then echo; fi", "python3 -c"),
        ('r=$(/usr/bin/python3.11 -W ignore -c "print(1)")', "python3.11 -c"),
        ("python3 - <<EOF", "python3 -"),
        ("cat /tests/check.py | python", "python -"),
        ("python3 -I -c 'import json'", None),
        ("python3 -Ic x && python3 -P -m unittest", None),
        ("python3 -Wignore -I -m unittest", None),
        ("python3 /tests/grade.py  # a script: its own directory goes first", None),
        ("command -v python3 >/dev/null || exit 1", None),
        ("# python3 -c 'a comment'", None),
        ("python3 --version", None),
    ],
)
def test_verifier_hazards_are_python_lines_that_put_the_working_directory_first(line: str, named: str | None) -> None:
    found = verifier_hazards(f"#!/bin/bash\n{line}\n")
    assert [hazard.split("'")[1] for hazard in found] == ([named] if named else []), found
    assert all(hazard.startswith("test.sh line 2 ") for hazard in found)


def test_the_oracle_hands_solve_sh_its_files_as_they_are_bytes_and_modes(tmp_path: Path) -> None:
    """A solution may carry bytes that are no text (an archive, a patch in Latin-1) and helpers it runs
    by path: they reach the sandbox byte for byte and executable (the oracle raised UnicodeDecodeError)."""
    blob = bytes(range(256)) * 2000  # 512 KB, no UTF-8: written in pieces
    made = "python3 -Ic 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 2000)'"
    solve = f'{made} | cmp - "$(dirname "$0")/blob.bin" && "$(dirname "$0")/helper.sh" > out.txt\n'
    task = make_task(tmp_path, solve=solve)
    (task / "solution" / "blob.bin").write_bytes(blob)
    (task / "solution" / "helper.sh").write_text("#!/bin/sh\necho 42\n")
    (task / "solution" / "helper.sh").chmod(0o755)
    env = harbor_environment(task)()
    try:
        env.reset("train/answer")
        results = [env.step(call) for call in solution_calls(read_task(task))]
        assert results[-1].reward == 1.0, [result.observation.text[-300:] for result in results]
    finally:
        env.close()


def test_a_solve_sh_that_names_harbors_solution_directory_runs_as_under_harbor(tmp_path: Path) -> None:
    """Harbor's oracle puts ``solution/`` at ``/solution``: a ``solve.sh`` naming its helper there finds it
    (it was at /tmp/omnienv-solution alone, so the task read as unsolvable). An agent finds nothing there."""
    task = make_task(tmp_path, solve="bash /solution/helper.sh > out.txt\n")
    (task / "solution" / "helper.sh").write_text("echo 42\n")
    env = harbor_environment(task)()
    try:
        env.reset("train/answer")
        seen = env.step(ToolCall("run", {"command": "ls -A /solution/"})).observation.text
        assert "No such file or directory" in seen, seen  # a link to where nothing is yet
        results = [env.step(call) for call in solution_calls(read_task(task))]
        assert results[-1].reward == 1.0, [result.observation.text[-300:] for result in results]
    finally:
        env.close()


def test_a_task_the_suite_does_not_hold_is_the_callers_task_error(tmp_path: Path) -> None:
    """A ``Task`` made by hand (or another environment's) is refused naming it: it was a KeyError wrapped
    as the environment's failure."""
    env = harbor_environment(make_task(tmp_path))()
    try:
        with pytest.raises(TaskError, match="has no task 'train/zzz'") as caught:
            env.reset(task=Task("train/zzz", split="train"))
        assert not isinstance(caught.value, EnvironmentFailure)
        with pytest.raises(TaskError, match="has no task 'train/zzz'"):
            env.preview(task=Task("train/zzz", split="train"))
    finally:
        env.close()


def test_a_failing_setup_is_an_infrastructure_failure_never_a_score(tmp_path: Path) -> None:
    broken = make_task(tmp_path, dockerfile="FROM x\nWORKDIR /app\nRUN exit 3\n")
    env = harbor_environment(broken)()
    try:
        with pytest.raises(Exception, match="exited with 3"):
            env.reset()
    finally:
        env.close()


def test_the_contract_checks_pass_and_the_env_is_served_over_ws(tmp_path: Path, serve) -> None:  # type: ignore[no-untyped-def]
    task = make_task(tmp_path)
    cls = harbor_environment(task)
    report = check_env(cls)
    assert report.ok, report
    url, _ = serve(str(task))
    client = WebSocketClient.connect(url)
    try:
        client.reset("train/answer")
        for call in solution_calls(read_task(task)):
            result = client.step(call)
        assert result.done and result.reward == 1.0
    finally:
        client.close()


def test_a_served_command_may_outlast_the_servers_step_deadline_within_its_own_timeout(tmp_path: Path, serve) -> None:  # type: ignore[no-untyped-def]
    """The agent sets a command's timeout (up to 600 s, over the server's 300 s step deadline) and a
    verifier may run longer still: a step cut by the deadline would void the agent's episode."""
    task = make_task(tmp_path)
    assert harbor_environment(task).step_seconds() >= 600 + 20
    slow_build = make_task(tmp_path / "slow", toml_extra="[environment]\nbuild_timeout_sec = 5000\n")
    assert harbor_environment(slow_build).step_seconds() >= 5000, "a reset builds the task under the same deadline"
    url, _ = serve(str(task), step_timeout=1.0)
    client = WebSocketClient.connect(url)
    try:
        client.reset("train/answer")
        slow = client.step(ToolCall("run", {"command": "sleep 2; echo 42 > out.txt; echo slept", "timeout": 30}))
        assert slow.failure is None and "slept" in slow.observation.text, slow
        assert client.step(ToolCall("submit", {})).reward == 1.0
    finally:
        client.close()


# -- the shipped suite ---------------------------------------------------------------------------


def test_the_suite_is_large_and_split_and_every_category_is_in_both_splits() -> None:
    tasks = Terminal.harbor_tasks()
    assert len(tasks) >= 40
    by_split = {
        split: {t.metadata["category"] for t in tasks.values() if t.split == split} for split in Terminal.splits
    }
    assert by_split["train"] == by_split["test"] and len(by_split["train"]) >= 6, by_split
    for task in tasks.values():
        assert (task.solution_dir / "solve.sh").is_file() and task.steps, task.id
        assert os.path.getsize(task.path / "instruction.md") > 40, task.id


def test_the_tasks_time_limit_ends_the_episode_and_it_is_still_graded(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    (task / "task.toml").write_text((task / "task.toml").read_text().replace("timeout_sec = 60", "timeout_sec = 1"))
    env = harbor_environment(task)()
    try:
        env.reset()
        env.step(ToolCall("run", {"command": "echo 42 > out.txt"}))
        slow = env.step(ToolCall("run", {"command": "sleep 30", "timeout": 60}))
        assert "[interrupted" in slow.observation.text and not slow.done
        over = env.step(ToolCall("run", {"command": "echo more"}))
        assert over.done and over.info["ended_by_agent"]["reason"] == "agent_timeout" and over.failure is None
        assert over.reward == 1.0, "the workspace is graded as the agent left it"
    finally:
        env.close()


def test_the_guides_python_runs_as_written() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "terminal.md"
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), re.DOTALL)
    assert blocks
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"terminal.md, python block {number}", "exec"), {"__name__": "terminal_guide"})


def test_a_suite_may_share_files_by_link_but_no_link_leads_out_of_it(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    task = make_task(suite)
    (suite / "_shared").mkdir()
    (suite / "_shared" / "grade.sh").write_text(GRADE)
    (task / "tests" / "test.sh").unlink()
    (task / "tests" / "test.sh").symlink_to("../../_shared/grade.sh")
    env = harbor_environment(suite)()
    try:
        assert play(env, "train/answer", "echo 42 > out.txt") == 1.0, "the shared verifier must reach the sandbox"
    finally:
        env.close()
    with pytest.raises(HarborTaskError, match="load the folder that holds both"):
        read_task(task)
    (task / "tests" / "secret").symlink_to("/etc/hostname")
    with pytest.raises(HarborTaskError, match="links to /etc/hostname"):
        read_task(task, "answer", suite)


def test_the_sandbox_of_a_killed_process_is_swept_by_the_next_processes_first_episode(tmp_path: Path) -> None:
    """A server killed mid-episode (SIGKILL, the OOM killer) cannot unmount its shell's storage:
    the next process's first episode sweeps it, mounts and files, as the kernel pools do."""
    import signal
    import subprocess
    import sys

    from omnienv.envs.terminal import env as terminal_env

    make_task(tmp_path)
    child = (
        "import sys; from omnienv.envs.terminal import harbor_environment\n"
        "from pathlib import Path; env = harbor_environment(Path(sys.argv[1]))(); env.reset('train/answer')\n"
        "print(env.sandbox.root, flush=True); sys.stdin.read()\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", child, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        root = Path(process.stdout.readline().strip())
        assert root.name.startswith(terminal_env.SHELL_PREFIX) and (root / "work" / "home").is_dir()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    try:
        assert str(root / "work") in Path("/proc/self/mounts").read_text(), "the killed process left it mounted"
        terminal_env.sweep_dead_owners.cache_clear()  # as in a process that has had no episode yet
        env = harbor_environment(tmp_path)()
        try:
            assert play(env, "train/answer", "echo 42 > out.txt") == 1.0
        finally:
            env.close()
        assert not root.exists() and str(root) not in Path("/proc/self/mounts").read_text()
    finally:
        terminal_env.sweep_dead_owners.__wrapped__()  # nothing is left, even when the sweep failed


def test_a_verifier_that_floods_its_output_is_read_as_it_comes_never_stored(tmp_path: Path) -> None:
    """The verifier's output may be the agent's (a test run printing what its code prints): it went to
    a file on the host's disk, up to the per-file limit (512 MiB) for every grading at once, and past
    that limit the verifier was killed. It is read as it comes and only its tail is kept."""
    flood = "if head -c 600M /dev/zero; then r=1; else r=0; fi; echo $r > /logs/verifier/reward.txt\n"
    env = harbor_environment(make_task(tmp_path, test=f"#!/bin/bash\n{flood}"))()
    try:
        assert play(env, "train/answer") == 1.0, env.state().fields
    finally:
        env.close()


def test_read_file_shows_a_file_up_to_64_kb_whole(tmp_path: Path) -> None:
    """It went through the shell's 20 KB window on a command's output: past that, the middle of the
    file was dropped with a note an agent could take for the file's own text."""
    env = harbor_environment(make_task(tmp_path))()
    try:
        env.reset("train/answer")
        text = "".join(f"line {number}\n" for number in range(5000))  # 53,890 bytes
        env.step(ToolCall("write_file", {"path": "big.txt", "content": text}))
        assert env.step(ToolCall("read_file", {"path": "big.txt"})).observation.text == text.removesuffix("\n")
        env.step(ToolCall("write_file", {"path": "bigger.txt", "content": text * 2}))
        shown = env.step(ToolCall("read_file", {"path": "bigger.txt"})).observation.text
        assert shown.startswith(text) and shown.endswith("is longer than 65536 bytes: read the rest with run]")
    finally:
        env.close()
