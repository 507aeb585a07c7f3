"""Images built by ``omnienv build`` from a local base, started by ``from_docker_image`` and driven by
OpenEnv's own client from its virtualenv; the Jupyter image also faces the security suite's probes
from inside its sandbox; the desktop image runs Xvfb and its apps in the container and a task is
solved on it; an exported Harbor task's image is built and run as Harbor runs it. A private daemon
runs them (tests/deploy/daemon.py) and is taken down after.
"""

from __future__ import annotations

import asyncio
import io
import json
import secrets
import signal
import subprocess
import sys
import tarfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import docker
import pytest
from PIL import Image

from omnienv.client import AsyncHTTPClient, AsyncWebSocketClient, HTTPClient, WebSocketClient
from omnienv.client.container import OWNER_LABEL, ContainerError, start_container
from omnienv.core import CapacityError, ImageBlock, ToolCall
from omnienv.envs.desktop import Desktop
from omnienv.envs.terminal import Terminal, export_harbor
from omnienv.envs.terminal.oracle import solution_calls
from omnienv.envs.wordle.env import Wordle
from omnienv.envs.wordle.solver import WordleSolver
from tests.deploy.conftest import Images
from tests.deploy.daemon import BASE_IMAGE, pip_ca_bundle
from tests.envs.test_harbor_export import rewards
from tests.net import free_port, healthy
from tests.peerenv import ROOT, peer_python
from tests.peers._run import by_kind
from tests.peers.test_openenv import _win_reward
from tests.security.test_jupyter_secrets import SCAN, SECRET_NAMES
from tests.security.test_terminal_grader import arm

OPENENV_SCRIPT = ROOT / "tests" / "peers" / "openenv" / "wordle_client.py"
CALLS_SCRIPT = Path(__file__).with_name("openenv_calls.py")
OMNIENV = str(Path(sys.executable).with_name("omnienv"))
WORDLE_TASK = "test/0003"
ESCAPE = """
import os, socket
print("pids", len([p for p in os.listdir("/proc") if p.isdigit()]))
print("code", [p for p in ("/opt/omnienv", "/opt/omnienv/omnienv-src", "/opt/omnienv/venv") if os.path.exists(p)])
try:
    open("/usr/probe", "w")
except OSError as e:
    print("usr", type(e).__name__)
try:
    import omnienv
    print("import omnienv", omnienv.__file__)
except ImportError:
    print("no omnienv")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("server reachable")
except OSError as e:
    print("server unreachable", e.errno)
"""


def _ours() -> list[str]:
    """Containers this suite's clients started that are still there."""
    with closing(docker.from_env()) as client:
        return [c.id for c in client.containers.list(all=True, filters={"label": OWNER_LABEL})]


def _openenv(*args: str, timeout: float = 300) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(peer_python("openenv")), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    assert done.returncode == 0, f"OpenEnv's client failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_the_wordle_image_plays_through_openenvs_own_clients(images: Images) -> None:
    answer = Wordle.task_index().find(WORDLE_TASK, "test").answer
    wrong = next(w for w in ("crane", "slate", "pious") if w != answer)
    container = start_container(images("wordle"))
    try:
        lines = _openenv(str(OPENENV_SCRIPT), container.url, WORDLE_TASK, wrong, answer, "generic-sync", "typed-sync")
    finally:
        container.stop()
    assert not _ours()
    for line in lines:
        assert "error" not in line, line
        assert "guess" in line["tools"], line
        steps = {step["name"]: step for step in line["steps"]}
        assert steps["wrong"]["done"] is False and steps["wrong"]["is_error"] is False, line
        assert steps["answer"]["done"] is True and steps["answer"]["reward"] == pytest.approx(_win_reward(2)), line


@pytest.mark.parametrize("client", [WebSocketClient, HTTPClient])
def test_from_docker_image_serves_and_stops_with_the_client(images: Images, client: type) -> None:
    env = client.from_docker_image(images("wordle"))
    try:
        assert env.container is not None and env.container.running()
        assert "Wordle" in env.reset(WORDLE_TASK).text
        assert env.step(ToolCall("guess", {"word": "crane"})).failure is None
    finally:
        env.close()
    assert env.container is None and not _ours()


@pytest.mark.parametrize("client", [AsyncWebSocketClient, AsyncHTTPClient])
def test_async_from_docker_image_stops_with_the_client(images: Images, client: type) -> None:
    async def play() -> str:
        env = await client.from_docker_image(images("wordle"), network="host")
        try:
            return str((await env.reset(WORDLE_TASK)).text)
        finally:
            await env.close()

    assert "Wordle" in asyncio.run(play())
    assert not _ours()


def test_a_missing_image_is_a_clear_error(docker_env: dict[str, str]) -> None:
    with pytest.raises(ContainerError, match="omnienv build"):
        WebSocketClient.from_docker_image("omnienv-no-such-image:latest")


@pytest.mark.parametrize("name", ["jupyter", "desktop"])
def test_a_sandboxing_image_refuses_to_start_where_it_cannot_sandbox(images: Images, name: str) -> None:
    """Started without the two container options bubblewrap needs, the server exits and says why."""
    with closing(docker.from_env()) as client:
        container = client.containers.run(images(name), detach=True, network_mode="host", environment={"PORT": "1"})
        try:
            assert container.wait(timeout=120)["StatusCode"] != 0
            logs = container.logs().decode()
        finally:
            container.remove(force=True)
    assert "bubblewrap cannot run here" in logs and "never runs the agent's programs unsandboxed" in logs, logs


def test_the_jupyter_image_sandboxes_the_agent_against_the_security_probes(images: Images) -> None:
    secrets_in_container = {name: f"{name.lower()}-{secrets.token_hex(12)}" for name in SECRET_NAMES}
    # the scan reads every file the sandbox can: as on the host (tests/security), it gets 120 s a cell
    container = start_container(images("jupyter"), env=secrets_in_container | {"OMNIENV_JUPYTER_CELL_TIMEOUT": "120"})
    port = container.url.rsplit(":", 1)[1]
    scan = SCAN.format(values=[v.encode().hex() for v in secrets_in_container.values()])
    probes = [
        ["add_and_execute_code_cell", {"code": scan}],
        ["execute_shell_command", {"command": "env; tr '\\0' '\\n' < /proc/1/environ; cat /proc/self/environ"}],
        ["add_and_execute_code_cell", {"code": ESCAPE.format(port=port)}],
    ]
    try:
        lines = _openenv(str(CALLS_SCRIPT), container.url, "train/fib_mod-0", json.dumps(probes))
        server_logs = container.logs()
    finally:
        container.stop()
    assert not _ours()
    scan, shell, escape = (json.dumps(step["observation"]) for step in by_kind(lines, "step"))
    assert "scanned True" in scan and "found []" in scan and "proc []" in scan, scan
    assert not [name for name, value in secrets_in_container.items() if value in shell], shell
    assert "pids " in escape and "code []" in escape, escape
    assert "usr OSError" in escape or "usr PermissionError" in escape, escape
    assert "no omnienv" in escape and "server unreachable" in escape, escape
    pids = int(escape.split("pids ")[1].split("\\n")[0])
    assert pids <= 8, f"the sandbox sees {pids} processes, not only its own: {escape}\n{server_logs}"


def test_the_terminal_images_graders_nest_their_sandboxes_inside_the_container(images: Images) -> None:
    """The image starts (its start-up check that graders can nest passes in the container), a task's
    own solution scores 1, and the same package armed against its grader scores 0."""
    task_id = "test/pkg-fix-calculator"
    env = WebSocketClient.from_docker_image(images("terminal"))
    try:
        env.reset(task_id)
        for call in solution_calls(Terminal.harbor_tasks()[task_id.partition("/")[2]]):
            solved = env.step(call)
        env.reset(task_id)
        for call in arm(task_id):
            env.step(call)
        armed = env.step(ToolCall("submit", {}))
    finally:
        env.close()
    assert (solved.reward, solved.done, solved.failure) == (1.0, True, None), solved
    assert (armed.reward, armed.done, armed.failure) == (0.0, True, None), armed


def test_the_desktop_image_runs_its_display_and_apps_and_a_task_is_won_on_it(images: Images) -> None:
    """Started with exactly the two container options bubblewrap needs, the desktop's server runs
    Xvfb, the window manager and the task's apps in the container: a screenshot is a PNG of the
    screen with the terminal's window drawn on it, a command runs in the session's home, and the
    task's check reads the file a shell wrote there (unsolved 0, solved 1)."""
    task_id = "train/terminal-echo"
    env = WebSocketClient.from_docker_image(images("desktop"))
    try:
        assert env.container is not None
        with closing(docker.from_env()) as client:
            host = client.api.inspect_container(env.container.id)["HostConfig"]
        env.reset(task_id)
        shot = env.step(ToolCall("screenshot", {}))
        command = env.step(ToolCall("run_command", {"command": "echo hi > x.txt; cat x.txt"}))
        unsolved = env.step(ToolCall("terminate", {"status": "success"}))
        env.reset(task_id)
        env.step(ToolCall("run_command", {"command": "echo hello-rl > hello.txt"}))
        solved = env.step(ToolCall("terminate", {"status": "success"}))
    finally:
        env.close()
    assert env.container is None and not _ours()
    assert host["SecurityOpt"] == ["seccomp=unconfined"] and host["MaskedPaths"] == host["ReadonlyPaths"] == []
    assert not host["Privileged"] and not host["CapAdd"], host
    image = shot.observation.content[0]
    assert isinstance(image, ImageBlock) and image.mime_type == "image/png", shot
    with Image.open(io.BytesIO(image.data)) as screen:
        assert (screen.format, screen.size) == ("PNG", Desktop().resolution)
        darkest, lightest = screen.convert("L").getextrema()
    assert lightest - darkest > 100, "the screen is blank: the terminal's window was not drawn"
    assert command.observation.text == "hi\n" and command.failure is None, command
    assert (unsolved.reward, unsolved.done, unsolved.failure) == (0.0, True, None), unsolved
    assert (solved.reward, solved.done, solved.failure) == (1.0, True, None), solved
    assert solved.info["success"] is True, solved


def test_serve_image_runs_the_container_with_the_servers_options_until_stopped(images: Images) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [OMNIENV, "serve", "--image", images("wordle"), "--port", str(port), "--max-sessions", "1"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not healthy(url):
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "the image's server was not healthy within 120 s"
            time.sleep(0.2)
        with WebSocketClient.connect(url) as first:
            first.reset(WORDLE_TASK)
            with pytest.raises(CapacityError):
                WebSocketClient.connect(url).reset(WORDLE_TASK)  # --max-sessions 1 reached the server
    finally:
        server.send_signal(signal.SIGTERM)  # as a process manager stops it (SIGINT is ignored in a background job)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert not _ours(), "omnienv serve --image left its container behind"


def _folder_as_tar(folder: Path, name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder, arcname=name)
    return buffer.getvalue()


def test_an_exported_harbor_task_builds_and_its_solution_wins_as_harbor_runs_it(images: Images, tmp_path: Path) -> None:
    """An exported Wordle task's environment/ builds with no registry holding omnienv (from the local
    base; its first layers are the Wordle image's, already built). In a container started as Harbor
    starts one (its own command, no network, no added option), solution/solve.sh plays; then tests/
    is copied in, as Harbor does once the agent is done, and tests/test.sh writes the win's reward."""
    images("wordle")
    export_harbor(Wordle, tmp_path, ["test"], base=BASE_IMAGE, ca_cert=pip_ca_bundle())
    task_dir = tmp_path / WORDLE_TASK.replace("/", "-")
    tag = f"omnienv-test-harbor-task:{secrets.token_hex(4)}"
    with closing(docker.from_env()) as client:
        container = None
        try:
            client.images.build(path=str(task_dir / "environment"), tag=tag, network_mode="host", forcerm=True)
            container = client.containers.run(tag, ["sh", "-c", "sleep infinity"], detach=True, network_mode="none")

            def run(script: str) -> str:
                code, output = container.exec_run(["bash", "-c", script], workdir="/app")
                assert code == 0, f"{script} exited {code}: {output.decode(errors='replace')[-3000:]}"
                return str(output.decode())

            run("mkdir -p /logs/verifier")
            container.put_archive("/", _folder_as_tar(task_dir / "solution", "solution"))
            run("bash /solution/solve.sh")
            container.put_archive("/", _folder_as_tar(task_dir / "tests", "tests"))
            run("bash /tests/test.sh")
            reward = json.loads(run("cat /logs/verifier/reward.json"))["reward"]
        finally:
            if container is not None:
                container.remove(force=True)
            if client.images.list(name=tag.split(":")[0]):
                client.images.remove(tag, force=True)
    assert reward == rewards(Wordle, WordleSolver, [WORDLE_TASK])[0] and reward > 1.0
