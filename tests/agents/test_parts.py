"""The runner's parts one by one: the shell-tool match, the shim, harness specs, the relay's answers."""

from __future__ import annotations

import asyncio
import io
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from omnienv.agents import (
    CommandHarness,
    EpisodeContext,
    MiniSweAgent,
    find_shell_tool,
    load_harness,
    load_spec,
    run_agents,
)
from omnienv.agents.harness import DEAD_PROXY, base_environ, install_shim
from omnienv.agents.relay import EpisodeShell, Relay
from omnienv.agents.shell import ShellTool, shell_only_note
from omnienv.agents.shim import _command, baked, main
from omnienv.core import (
    EpisodeOverError,
    InvalidValueError,
    Observation,
    SessionLostError,
    StepResult,
    ToolCall,
    UsageError,
)
from omnienv.envs.desktop import Desktop
from omnienv.envs.jupyter import Jupyter
from omnienv.envs.terminal import Terminal
from omnienv.envs.wordle import Wordle


def test_the_shell_tools_of_terminal_jupyter_and_the_desktop_are_found() -> None:
    assert find_shell_tool(Terminal.tools) == ShellTool("run", "command", "timeout", "submit", None, None, 60.0)
    assert find_shell_tool(Jupyter.tools) == ShellTool(
        "execute_shell_command", "command", None, "final_answer", "answer"
    )
    # the desktop's terminate(status) ends its episode: submitting is saying "success"
    desktop = find_shell_tool(Desktop.tools)
    assert desktop == ShellTool("run_command", "command", None, "terminate", "status", "success")
    assert desktop.submit_call("whatever follows the marker") == ToolCall("terminate", {"status": "success"})
    with pytest.raises(UsageError, match=r"no shell tool .* its tools: get_history, guess"):
        find_shell_tool(Wordle.tools)
    with pytest.raises(UsageError, match="no tool 'read_file' taking a string 'command'"):
        find_shell_tool(Terminal.tools, "read_file")


def test_a_shell_only_harness_is_told_the_tools_it_lacks_and_how_it_submits() -> None:
    desktop = shell_only_note(Desktop.tools, find_shell_tool(Desktop.tools), "MARK")
    assert desktop.startswith("\n\n") and "(screenshot, cursor_position," in desktop and "hold_key, wait)" in desktop
    assert "run_command" not in desktop and "(what the task calls terminate), run `echo MARK`." in desktop
    jupyter = shell_only_note(Jupyter.tools, find_shell_tool(Jupyter.tools), "MARK")
    assert "get_notebook_state" in jupyter and "execute_shell_command" not in jupyter
    # the example the note gives submits the answer alone: the relay's rule reads what follows the marker
    example = jupyter.split("e.g. `")[1].split("`")[0].replace("ANSWER", "42")
    printed = subprocess.run(["sh", "-c", example], capture_output=True, text=True, check=True).stdout
    session = FakeSession(result(printed + "[exit code 0]"), result("Submitted.", done=True))
    shell = EpisodeShell(session, find_shell_tool(Jupyter.tools), "MARK")  # type: ignore[arg-type]
    assert asyncio.run(shell.run(example, None))["submitted"] is True
    assert session.calls[1] == ToolCall("final_answer", {"answer": "42"})
    # a harness with no marker cannot submit, and is told so; a shell alone needs no note
    unmarked = shell_only_note(Terminal.tools, find_shell_tool(Terminal.tools), None)
    assert "You cannot call submit: when you stop" in unmarked
    assert shell_only_note(["run"], ShellTool("run"), "MARK") == ""


def test_a_tool_text_splits_into_output_and_exit_code() -> None:
    assert ShellTool.parse("a\nb\n[exit code 3]") == ShellTool.parse("a\nb[exit code 3]\n") == _out("a\nb", 3)
    assert ShellTool.parse("[exit code 0]") == _out("", 0)
    assert ShellTool.parse("x\n[command stopped after 29 s]").exit_code == 124  # jupyter's time limit
    assert ShellTool.parse("the command is empty", is_error=True).exit_code == 2
    assert ShellTool.parse("plain output") == _out("plain output", 0)  # jupyter writes no code for 0
    assert ShellTool.parse("(no output)") == _out("", 0)  # jupyter's and the desktop's word for none
    # the desktop's run_command: its stderr after the output, then a code where it is not 0
    assert ShellTool.parse("x\n(exit code 3)") == _out("x", 3) and ShellTool.parse("\n(exit code 1)") == _out("", 1)
    assert ShellTool.parse("x\nSTDERR: no such file\n\n(exit code 2)") == _out("x\nSTDERR: no such file\n", 2)
    assert ShellTool.parse("x\nSTDERR: a warning\n") == _out("x\nSTDERR: a warning\n", 0)
    assert ShellTool.parse("x\n(killed after 60 s)").exit_code == 124
    tool = find_shell_tool(Terminal.tools)
    assert tool.call("ls", 5.0) == ToolCall("run", {"command": "ls", "timeout": 5.0})
    # no limit past the harness's end: the one passed, or the tool's default (60 s), is cut to it
    assert tool.call("ls", 600.0, left=7.5) == tool.call("ls", None, left=7.5) == tool.call("ls", 7.5)
    assert tool.call("ls", None, left=-1.0).arguments["timeout"] == 0.001
    assert tool.call("ls", None, left=100.0) == ToolCall("run", {"command": "ls"})
    assert find_shell_tool(Jupyter.tools).call("ls", 5.0) == ToolCall("execute_shell_command", {"command": "ls"})
    assert tool.submit_call(" ignored ") == ToolCall("submit", {})
    assert find_shell_tool(Jupyter.tools).submit_call(" 42\n") == ToolCall("final_answer", {"answer": "42"})


def _out(output: str, code: int) -> Any:
    from omnienv.agents.shell import ShellOutput

    return ShellOutput(output, code)


def test_the_shim_reads_the_command_as_sh_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _command(["-c", "ls -la"]) == "ls -la"
    assert _command(["-lc", "ls"]) == _command(["-l", "-c", "ls"]) == _command(["--login", "-c", "ls"]) == "ls"
    assert _command(["-o", "pipefail", "-e", "-c", "false | true"]) == "false | true"
    assert _command(["-c", 'echo "$1"', "sh", "a b"]) == "set -- 'a b'\necho \"$1\""
    assert _command(["-c"]) is None
    script = tmp_path / "script.sh"
    script.write_text("echo from a file\n")
    assert _command([str(script)]) == "echo from a file\n"
    assert _command([str(tmp_path / "missing.sh")]) is None
    monkeypatch.setattr(sys, "stdin", io.StringIO("echo piped\n"))
    assert _command([]) == "echo piped\n"


def test_the_shim_fails_plainly_without_a_relay(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.delenv("OMNIENV_SHELL_URL", raising=False)
    assert main(["-c", "ls"]) == 126 and "OMNIENV_SHELL_URL is not set" in capsys.readouterr().err
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    assert main(["-c", "ls"], url=f"http://127.0.0.1:{closed}/episodes/x") == 126
    assert "omnienv-shell:" in capsys.readouterr().err
    assert main(["-c"], url="http://127.0.0.1:1/x") == 2


def test_a_baked_shim_carries_its_url_and_runs_without_site_packages() -> None:
    text = baked("http://127.0.0.1:5/episodes/t", "/usr/bin/python3")
    assert text.startswith("#!/usr/bin/python3 -IS\n")
    assert "_BAKED_URL: str | None = 'http://127.0.0.1:5/episodes/t'" in text
    compile(text, "omnienv-shell", "exec")


def context(tmp_path: Path) -> EpisodeContext:
    return EpisodeContext(
        0,
        "Do the thing.",
        "m",
        "http://127.0.0.1:1/episodes/e/v1",
        "key",
        "http://127.0.0.1:2/episodes/t",
        tmp_path,
        60,
    )


def test_a_spec_launches_its_command_with_the_endpoint_and_the_shim(tmp_path: Path) -> None:
    spec = tmp_path / "agent.toml"
    spec.write_text(
        'command = "{python} {spec_dir}/run.py --model {model} {instruction}"\n'
        'instruction = "argument"\nshell_names = ["bash"]\n[endpoint]\nbase_url = "MY_URL"\n[env]\nX = "{workdir}/x"\n'
    )
    harness = load_spec(spec)
    assert harness.name == "agent" and harness.shell_names == ("omnienv-shell", "bash")
    where = context(tmp_path / "episode")
    where.workdir.mkdir()
    install_shim(where, harness.shell_names)
    launch = harness.launch(where)
    assert launch.argv == [sys.executable, f"{tmp_path}/run.py", "--model", "m", "Do the thing."]
    assert launch.env["MY_URL"] == where.base_url and launch.env["OPENAI_API_KEY"] == "key"
    assert launch.env["OPENAI_MODEL"] == "m" and launch.env["X"] == f"{where.workdir}/x" and launch.stdin is None
    assert launch.env["PATH"].split(":")[0] == str(where.bin_dir) and launch.env["SHELL"] == str(where.shell)
    assert (where.bin_dir / "bash").resolve() == where.shell.resolve()
    assert launch.env["HTTPS_PROXY"] == DEAD_PROXY and "127.0.0.1" in launch.env["NO_PROXY"]
    assert launch.env["HOME"] == str(where.home) and where.home.is_dir()
    piped = CommandHarness("piped", ("cat",), instruction="stdin").launch(where)
    assert piped.stdin == b"Do the thing." and (where.workdir / "instruction.md").read_text() == "Do the thing."


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('command = "x"\nmodel = "m"\n', "unknown key"),
        ("command = 3\n", "'command' must be"),
        ('command = "x {nope}"\n', "unknown placeholder"),
        ('command = "x"\ninstruction = "argument"\n', "needs {instruction}"),
        ('command = "x"\ninstruction = "fax"\n', "instruction must be one of"),
        ('command = "x"\n[endpoint]\nurl = "U"\n', "takes only"),
        ('command = "x"\ntimeout_s = -1\n', "positive number"),
        ('command = "x"\nsubmit_marker = " "\n', "non-empty string"),
        ('command = "x"\nshell_names = ["/bin/sh"]\n', "program names"),
        ('command = "x"\n[env]\nA = 1\n', "table of strings"),
        ("command = [", "cannot read"),
        ('command = "x"\nname = "\udcff"\n', "cannot read the harness spec .*'utf-8' codec"),  # the byte 0xff
        ('command = "echo \\"x"\n', "'command' cannot be split like a shell line \\(No closing quotation"),
    ],
)
def test_a_bad_spec_is_refused_with_the_reason(tmp_path: Path, text: str, error: str) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(UsageError, match=error):
        load_spec(spec)


def test_harnesses_load_by_name_or_path(tmp_path: Path) -> None:
    assert load_harness("mini-swe-agent", python="/x/python") == MiniSweAgent("/x/python")
    with pytest.raises(UsageError, match="unknown harness 'claude'"):
        load_harness("claude")
    with pytest.raises(UsageError, match="no harness spec file"):
        load_harness(str(tmp_path / "missing.toml"))
    spec = tmp_path / "a.toml"
    spec.write_text('command = ["nonexistent-agent-program"]\n')
    with pytest.raises(UsageError, match="harness options are for built-in"):
        load_harness(str(spec), python="/x/python")
    with pytest.raises(UsageError, match="cannot find the program 'nonexistent-agent-program'"):
        load_harness(str(spec)).check()
    with pytest.raises(UsageError, match="cannot import minisweagent"):
        MiniSweAgent(sys.executable).check()  # this virtualenv has omnienv but not mini-swe-agent
    with pytest.raises(UsageError, match="no interpreter"):
        MiniSweAgent("/nonexistent/python").check()
    assert base_environ(context(tmp_path), {})["PATH"].startswith(str(tmp_path / "bin"))


class FakeSession:
    """The part of a session client the relay uses: ``step``, answering from a script."""

    def __init__(self, *answers: StepResult | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[ToolCall] = []

    async def step(self, call: ToolCall) -> StepResult:
        self.calls.append(call)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_run_agents_refuses_a_concurrency_below_one_before_anything_starts(tmp_path: Path) -> None:
    """It ran one episode at a time, saying nothing, as the rollout entry points did."""
    spec = tmp_path / "a.toml"
    spec.write_text('command = ["true"]\n')
    model = "http://127.0.0.1:9/v1"  # never called
    for concurrency in (0, -2):
        with pytest.raises(InvalidValueError, match=r"concurrency: -?\d is not in the range x>=1"):
            run_agents(load_spec(spec), "terminal", model="m", base_url=model, concurrency=concurrency)


def result(text: str, **fields: Any) -> StepResult:
    return StepResult(Observation.of(text), **fields)


def test_the_relay_submits_on_the_marker_and_then_refuses() -> None:
    session = FakeSession(result("MARK\nthe answer\n[exit code 0]"), result("Submitted.", done=True))
    shell = EpisodeShell(session, find_shell_tool(Terminal.tools), "MARK")  # type: ignore[arg-type]
    first = asyncio.run(shell.run("echo MARK; echo the answer", None))
    assert first == {
        "output": "MARK\nthe answer",
        "exit_code": 0,
        "over": True,
        "submitted": True,
        "note": "Submitted.",
    }
    assert session.calls[1] == ToolCall("submit", {}) and len(shell.steps) == 2
    later = asyncio.run(shell.run("ls", None))
    assert later["exit_code"] == 1 and later["over"] and len(session.calls) == 2  # nothing more reaches the session


def test_the_relay_ends_on_the_environments_word_or_its_loss() -> None:
    tool = find_shell_tool(Terminal.tools)
    cut = EpisodeShell(FakeSession(result("x\n[exit code 0]", truncated=True)), tool)  # type: ignore[arg-type]
    assert asyncio.run(cut.run("x", 3)) == {
        "output": "x",
        "exit_code": 0,
        "over": True,
        "submitted": False,
        "note": "the episode is over: its turn limit is reached",
    }
    over = EpisodeShell(FakeSession(EpisodeOverError("over")), tool)  # type: ignore[arg-type]
    assert asyncio.run(over.run("x", None))["exit_code"] == 126 and over.failure is None and over.over.is_set()
    lost = EpisodeShell(FakeSession(SessionLostError("gone")), tool)  # type: ignore[arg-type]
    answer = asyncio.run(lost.run("x", None))
    assert answer["exit_code"] == 126 and lost.failure is not None and lost.failure.kind == "session_lost"
    assert not EpisodeShell(FakeSession(), tool, "MARK")._is_submission("MARK\n", 1)  # type: ignore[arg-type]


def test_the_relay_answers_only_its_episodes_and_well_formed_calls() -> None:
    relay = Relay()
    shell = EpisodeShell(FakeSession(result("hi\n[exit code 0]")), find_shell_tool(Terminal.tools))  # type: ignore[arg-type]
    token = relay.open(shell)
    with TestClient(relay.app) as client:
        assert client.post("/episodes/nope/run", json={"command": "ls"}).status_code == 404
        assert client.post(f"/episodes/{token}/run", content=b"{").status_code == 400
        assert client.post(f"/episodes/{token}/run", json={"command": 3}).status_code == 400
        assert client.post(f"/episodes/{token}/run", content=b" " * (5 << 20)).status_code == 413
        for timeout in (b"1" + b"0" * 400, b"NaN", b"Infinity", b"true"):  # a 500 (OverflowError), or no limit
            body = b'{"command": "ls", "timeout": ' + timeout + b"}"
            assert client.post(f"/episodes/{token}/run", content=body).status_code == 400, timeout
        lone = client.post(f"/episodes/{token}/run", content=b'{"command": "echo \\ud800"}')
        assert lone.status_code == 400 and "surrogate" in lone.json()["error"] and not shell.steps
        answer = client.post(f"/episodes/{token}/run", json={"command": "echo hi", "timeout": 5})
        assert answer.json() == {"output": "hi", "exit_code": 0, "over": False, "submitted": False, "note": None}
    relay.close(token)
    assert relay.shells == {}


def test_the_relay_refuses_a_huge_command_without_reading_it_all() -> None:
    """A body that says it is 1 GiB is refused once 4 MiB of it came, not buffered whole first."""
    from omnienv.agents.relay import serving

    relay = Relay()
    token = relay.open(EpisodeShell(FakeSession(), find_shell_tool(Terminal.tools)))  # type: ignore[arg-type]

    def send(url: str) -> bytes:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as connection:
            head = f"POST /episodes/{token}/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            connection.sendall(f"{head}Content-Length: {1 << 30}\r\n\r\n".encode() + b" " * (5 << 20))
            return connection.recv(100)

    async def play() -> bytes:
        async with serving(relay.app) as url:
            return await asyncio.to_thread(send, url)

    assert asyncio.run(play()).startswith(b"HTTP/1.1 413")
    nested = TestClient(relay.app).post(f"/episodes/{token}/run", content=b"[" * 100_000)
    assert nested.status_code == 400


def test_the_shim_and_mini_swe_agents_environment_speak_to_a_served_relay(capsys: Any) -> None:
    """Both clients against the relay on a real port: output, exit code, and mini-swe-agent's dict."""
    from omnienv.agents.minisweagent import SessionEnvironment
    from omnienv.agents.relay import serving

    relay = Relay()
    session = FakeSession(result("hi\n[exit code 0]"), result("oops\n[exit code 7]"))
    token = relay.open(EpisodeShell(session, find_shell_tool(Terminal.tools)))  # type: ignore[arg-type]

    async def both() -> tuple[int, dict[str, Any]]:
        async with serving(relay.app) as url:
            code = await asyncio.to_thread(main, ["-c", "echo hi"], f"{url}/episodes/{token}")
            environment = SessionEnvironment(shell_url=f"{url}/episodes/{token}", timeout=5, cwd="/app")
            return code, await asyncio.to_thread(environment.execute, {"command": "false"})

    code, output = asyncio.run(both())
    assert code == 0 and capsys.readouterr().out == "hi"
    assert output == {"output": "oops", "returncode": 7, "exception_info": ""}
    assert session.calls[1] == ToolCall("run", {"command": "cd /app && false", "timeout": 5})
    unreachable = SessionEnvironment(shell_url="http://127.0.0.1:1/episodes/x").execute({"command": "ls"})
    assert unreachable["returncode"] == -1 and "An error occurred" in unreachable["exception_info"]
    environment = SessionEnvironment(shell_url="u")
    assert {"system", "release", "shell_url"} <= set(environment.get_template_vars())
    assert environment.serialize()["info"]["config"]["environment"]["shell_url"] == "u"


def test_a_harness_still_running_after_its_episode_ended_is_stopped(tmp_path: Path) -> None:
    from omnienv.agents.harness import Launch
    from omnienv.agents.process import run_process

    async def play(over_already: bool, timeout_s: float) -> Any:
        over = asyncio.Event()
        if over_already:
            over.set()
        launch = Launch(["sh", "-c", "echo started; exec sleep 30"], {"PATH": "/usr/bin:/bin"}, b"ignored")
        return await run_process(launch, tmp_path, timeout_s, over, grace_s=0.3)

    ended = asyncio.run(play(True, 30.0))
    assert ended.stopped == "episode_over" and ended.seconds < 10 and ended.exit_code is not None
    assert ended.log_tail() == "started\n"
    late = asyncio.run(play(False, 0.5))
    assert late.stopped == "timeout" and late.exit_code is not None


def test_mini_swe_agents_config_reads_back_exactly_as_yaml() -> None:
    """JSON escapes an emoji as a surrogate pair, which PyYAML read as two lone halves: every model
    call of the episode then failed to encode, and the episode was flagged instead of played."""
    import yaml

    from omnienv.agents.minisweagent.harness import yaml_json

    text = 'Fix the bug 😀 — "quoted" \\ back\tslash\n\x85 \u2028 \x7f \x01 \x9f 中文'
    assert yaml.safe_load(yaml_json({"run": {"task": text}})) == {"run": {"task": text}}


def test_mini_swe_agents_outcome_reads_only_a_regular_file_of_its_trajectory(tmp_path: Path) -> None:
    """The runner reads the trajectory the harness left in its directory: a FIFO there blocked the
    read for good (and the run's event loop with it); an ``info`` that is no object raised."""
    import os
    import threading

    where = context(tmp_path)
    trajectory = tmp_path / "trajectory.json"
    os.mkfifo(trajectory)
    found: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: found.append(MiniSweAgent().outcome(where)))
    reader.start()
    reader.join(10)
    blocked = reader.is_alive()
    if blocked:  # a writer opening the FIFO lets the blocked read go on
        with open(trajectory, "wb"):
            pass
        reader.join(10)
    assert not blocked and found == [{"exit_status": None}]
    trajectory.unlink()
    trajectory.symlink_to("/dev/zero")
    assert MiniSweAgent().outcome(where) == {"exit_status": None}
    trajectory.unlink()
    trajectory.write_text('{"info": "x"}')
    assert MiniSweAgent().outcome(where) == {"exit_status": None}
    trajectory.write_text('{"info": {"exit_status": "Submitted", "model_stats": {"api_calls": 3}}}')
    assert MiniSweAgent().outcome(where) == {
        "exit_status": "Submitted",
        "submission": None,
        "api_calls": 3,
        "version": None,
    }
