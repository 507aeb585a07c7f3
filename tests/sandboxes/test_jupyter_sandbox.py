"""Sandboxed Jupyter kernels: real bubblewrap, real ipykernel, real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import omnienv
from omnienv.core import AgentCausedEnd, EnvironmentFailure
from omnienv.sandboxes.bubblewrap import HOME, Limits, SandboxUnavailableError, bwrap_command
from omnienv.sandboxes.cells import BoundedText, OutputLimits
from omnienv.sandboxes.cgroups import probe
from omnienv.sandboxes.jupyter import (
    JupyterSandbox,
    KernelDiedError,
    KernelPool,
    SandboxStartError,
    open_code_sandbox,
    sweep_stale,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pool() -> Iterator[KernelPool]:
    pool = KernelPool(2)
    try:
        yield pool
    finally:
        pool.close()
    assert not pool.live_kernels()


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def _open(pool: KernelPool, **kwargs: object) -> JupyterSandbox:
    return await JupyterSandbox.open(pool, **kwargs)  # type: ignore[arg-type]


def sandbox_run(pool: KernelPool, code: str, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        sandbox = await _open(pool)
        try:
            return await sandbox.run_code(code, timeout)
        finally:
            await sandbox.close()

    return run(go())


def test_cells_show_stdout_stderr_results_and_errors(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        try:
            out = await sandbox.run_code("import sys\nprint('out')\nprint('err', file=sys.stderr)\nx = 41\nx + 1")
            assert (out.stdout, out.stderr, out.results, out.error) == ("out\n", "err\n", ["42"], None)
            out = await sandbox.run_code("def f():\n    raise ValueError('bad value')\nf()")
            assert out.error is not None and out.error.name == "ValueError"
            assert "bad value" in out.error.traceback and "\x1b[" not in out.error.traceback
            out = await sandbox.run_code("x")  # the kernel is persistent
            assert out.results == ["41"]
        finally:
            await sandbox.close()

    run(go())


def test_shell_commands_report_stdout_stderr_exit_code_and_time_out(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        try:
            out = await sandbox.run_shell("echo hi; echo oops >&2; pwd; exit 3")
            assert out.stdout == f"hi\n{HOME}\n"
            assert out.stderr == "oops\n[exit code 3]\n"
            started = time.monotonic()
            out = await sandbox.run_shell("sleep 30", timeout=2)
            assert time.monotonic() - started < 10
            assert "stopped after" in out.stderr
            out = await sandbox.run_shell("yes | head -c 1000000")
            assert len(out.stdout) < 30_000
        finally:
            await sandbox.close()

    run(go())


def test_a_server_on_the_hosts_loopback_is_unreachable(pool: KernelPool) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            server.accept()[0].close()  # the server is real and reachable from the host
        out = sandbox_run(pool, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)")
        assert out.error is not None and out.error.name in ("ConnectionRefusedError", "OSError")
        with pytest.raises(TimeoutError):
            server.accept()
    out = sandbox_run(pool, "import socket\nsocket.getaddrinfo('example.com', 80)")
    assert out.error is not None and out.error.name == "gaierror"


def test_files_outside_the_allowed_paths_cannot_be_read(pool: KernelPool, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    for path in (str(secret), str(ROOT / "pyproject.toml"), "/root/.bashrc", "/etc/shadow"):
        out = sandbox_run(pool, f"open({path!r}).read()")
        assert out.error is not None and out.error.name in ("FileNotFoundError", "PermissionError"), path
    out = sandbox_run(pool, "import os\nos.listdir('/root')")
    assert "'.bashrc'" not in out.results[0]  # at most the Python installation is mounted there
    for hidden in (sys.prefix, str(ROOT), str(Path(omnienv.__file__).parent)):  # the server's venv, its code
        out = sandbox_run(pool, f"import os\nos.path.exists({hidden!r}) and os.listdir({hidden!r})")
        assert out.results == ["False"], (hidden, out)
    out = sandbox_run(pool, "import os\nsorted(os.environ)")
    assert "PYTEST_CURRENT_TEST" not in out.results[0]  # the host's environment does not leak in


def test_the_kernel_imports_its_packages_but_not_omnienv(pool: KernelPool) -> None:
    out = sandbox_run(pool, "import numpy, pandas, matplotlib, ipykernel\nprint(numpy.__file__)\nimport omnienv")
    assert out.stdout.startswith("/opt/site/numpy/") and out.error is not None
    assert out.error.name == "ModuleNotFoundError", out.error
    out = sandbox_run(pool, "import os, sys\n[p for p in sys.path if 'site-packages' in p and os.listdir(p)]")
    assert out.results == ["[]"], out  # the base installation's own site-packages is hidden
    out = sandbox_run(
        pool,
        "import subprocess\nprint(subprocess.run(['python3', '-c', 'import numpy; print(7)'], "
        "capture_output=True, text=True).stdout)",
    )
    assert out.stdout.strip() == "7", out  # the agent's own Python subprocesses see the same packages


def test_writes_outside_the_work_dir_fail(pool: KernelPool) -> None:
    marker = f"/tmp/omnienv-probe-{os.getpid()}"
    targets = ["/usr/escape.txt", "/etc/escape.txt", f"{sys.prefix}/escape.txt", str(ROOT / "escape.txt")]

    async def go() -> None:
        sandbox = await _open(pool)
        try:
            for target in targets:
                out = await sandbox.run_code(f"open({target!r}, 'w').write('x')")
                if target.startswith("/tmp/"):  # a checkout under /tmp: the write lands in the private /tmp
                    assert not os.path.exists(target), target
                    continue
                assert out.error is not None and out.error.name in (
                    "OSError",
                    "PermissionError",
                    "FileNotFoundError",
                ), target
            out = await sandbox.run_code(f"open({marker!r}, 'w').write('x'); open('mine.txt', 'w').write('y')")
            assert out.error is None
            assert (sandbox.kernel.host_work_dir / "mine.txt").read_text() == "y"
        finally:
            await sandbox.close()

    run(go())
    assert not any(os.path.exists(t) for t in [*targets, marker])  # /tmp in the sandbox is private


def test_a_memory_bomb_raises_memory_error_and_the_kernel_lives(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        try:
            out = await sandbox.run_code("hog = []\nwhile True:\n    hog.append(bytearray(50 * 2**20))", 60)
            assert out.error is not None and out.error.name == "MemoryError"
            out = await sandbox.run_code("del hog\nprint('alive')")
            assert out.stdout == "alive\n"
        finally:
            await sandbox.close()

    run(go())


@pytest.mark.skipif(
    os.geteuid() == 0 and "pids" not in probe().parents,
    reason="no pids cgroup, and RLIMIT_NPROC does not bind a sandbox mapped to root",
)
def test_a_fork_bomb_is_stopped_and_other_sessions_are_unaffected(pool: KernelPool) -> None:
    async def go() -> None:
        bomb, other = await _open(pool), await _open(pool)
        try:
            await other.run_code("kept = 7")
            out = await bomb.run_code("import os\nwhile True:\n    os.fork()", 5)
            assert not out.success and out.error is not None  # stopped by the limits, or at the time limit
            assert out.timed_out or out.error.name == "BlockingIOError", out
            assert bomb.kernel.stray_processes() == 0 and "were stopped" in out.notes[-1]
            out = await bomb.run_code("print('fresh')")
            assert out.stdout == "fresh\n"
            started = time.monotonic()
            out = await other.run_code("kept")
            assert out.results == ["7"] and time.monotonic() - started < 2
        finally:
            await bomb.close()
            await other.close()

    run(go())


def test_an_infinite_loop_is_interrupted_and_the_kernel_keeps_its_state(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        try:
            await sandbox.run_code("kept = 'yes'")
            started = time.monotonic()
            out = await sandbox.run_code("while True:\n    pass", 1.5)
            assert out.timed_out and not out.restarted and time.monotonic() - started < 5
            assert "time limit" in out.notes[0]
            assert (await sandbox.run_code("kept")).results == ["'yes'"]
        finally:
            await sandbox.close()

    run(go())


def test_a_loop_that_ignores_interrupts_ends_the_episode_as_the_agents_doing(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        try:
            code = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
            started = time.monotonic()
            with pytest.raises(AgentCausedEnd) as caught:
                await sandbox.run_code(code, 1)
            assert caught.value.reason == "time_limit" and time.monotonic() - started < 8
            assert not sandbox.kernel.alive()
        finally:
            await sandbox.close()

    run(go())


def test_a_child_that_ignores_interrupts_is_killed_at_the_time_limit(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        try:
            code = "import subprocess\nsubprocess.run(['sh', '-c', 'trap \"\" INT; sleep 60'])\nprint('after')"
            out = await sandbox.run_code(code, 1)
            assert out.timed_out and sandbox.kernel.alive() and sandbox.kernel.stray_processes() == 0, out
            assert (await sandbox.run_code("print('alive')")).stdout == "alive\n"
        finally:
            await sandbox.close()

    run(go())


def test_a_killed_kernel_is_a_typed_infrastructure_failure(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        try:
            sandbox.kill_kernel()
            with pytest.raises(KernelDiedError) as caught:
                await sandbox.run_code("print(1)")
            assert isinstance(caught.value, EnvironmentFailure) and caught.value.code == "KERNEL_DIED"
        finally:
            await sandbox.close()
        sandbox = await _open(pool)  # the pool goes on serving fresh kernels
        try:
            assert (await sandbox.run_code("print(2)")).stdout == "2\n"
        finally:
            await sandbox.close()

    run(go())


def test_a_kernel_that_kills_itself_is_the_agents_doing(pool: KernelPool) -> None:
    with pytest.raises(AgentCausedEnd) as caught:
        sandbox_run(pool, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert caught.value.reason == "kernel_died" and "exit status 137" in caught.value.message
    assert not isinstance(caught.value, EnvironmentFailure)


def test_outputs_are_bounded_and_images_are_png(pool: KernelPool) -> None:
    limits = OutputLimits(stream_chars=2_000, traceback_chars=1_500, images=2)

    async def go() -> None:
        sandbox = await _open(pool, limits=limits)
        try:
            out = await sandbox.run_code("print('x' * 3_000_000)")
            assert len(out.stdout) < 4_000 and "characters omitted" in out.stdout
            out = await sandbox.run_code("def f(n):\n    return f(n + 1)\nf(0)")
            assert out.error is not None and out.error.name == "RecursionError"
            assert len(out.error.traceback) < 1_600
            out = await sandbox.run_code(
                "import matplotlib.pyplot as plt\nfor i in range(3):\n    plt.figure(); plt.plot([1, i])\n"
                "    plt.show()"
            )
            assert len(out.images) == 2 and all(image.startswith(b"\x89PNG") for image in out.images)
            assert "1 image(s) not shown" in out.notes[0]
        finally:
            await sandbox.close()

    run(go())


def test_write_file_stays_in_the_work_dir(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        try:
            await sandbox.write_file("data/in.csv", b"a,b\n1,2\n")
            out = await sandbox.run_code("print(open('data/in.csv').read().split()[1])")
            assert out.stdout == "1,2\n"
            with pytest.raises(ValueError, match="outside the work directory"):
                await sandbox.write_file("../run/evil", b"x")
        finally:
            await sandbox.close()

    run(go())


def test_closing_reaps_the_sandbox_and_its_files(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await _open(pool)
        out = await sandbox.run_code("import subprocess\np = subprocess.Popen(['sleep', '600'])")
        kernel = sandbox.kernel
        assert kernel.stray_processes() == 0 and "1 process(es)" in out.notes[0], out  # gone with its cell
        assert kernel.pids() == kernel.baseline and len(kernel.baseline) == 3  # bwrap, its init, the kernel
        await sandbox.close()
        await sandbox.close()
        assert not kernel.alive() and not kernel.root.exists()
        with pytest.raises(KernelDiedError):
            await sandbox.run_code("print(1)")

    run(go())


def test_bounded_text_keeps_head_and_tail() -> None:
    text = BoundedText(10, tail=5)
    for chunk in ("0123456789", "abc", "defgh", "XYZ"):
        text.add(chunk)
    assert text.value() == "0123456789\n[... 6 characters omitted ...]\ngh" + "XYZ"


def test_limits_and_command_line() -> None:
    command = bwrap_command(["python"], work_dir="/w", limits=Limits(memory_bytes=123, processes=7))
    assert "--unshare-all" in command and "--die-with-parent" in command and "--clearenv" in command
    assert command[command.index("--bind") + 1 : command.index("--bind") + 3] == ["/w", HOME]
    assert "--as=123" in command and "--nproc=7" in command and command[-1] == "python"


def test_missing_bubblewrap_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        bwrap_command(["python"], work_dir="/w")
    with KernelPool(1) as broken, pytest.raises(SandboxStartError, match="apt-get install bubblewrap"):
        broken.acquire(timeout=20)


def test_the_e2b_backend_is_used_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnienv.sandboxes.e2b import E2BError

    monkeypatch.delenv("E2B_API_KEY", raising=False)
    with pytest.raises(E2BError, match="E2B_API_KEY is not set"):
        run(open_code_sandbox("e2b"))
    with pytest.raises(ValueError, match="use 'local' or 'e2b'"):
        run(open_code_sandbox("cloud"))


def test_a_sandbox_dropped_without_close_frees_its_kernel(pool: KernelPool) -> None:
    import gc

    async def go() -> object:
        sandbox = await _open(pool)
        await sandbox.run_code("print(1)")
        sandbox._disconnect()
        return sandbox.kernel

    kernel = run(go())
    gc.collect()
    assert not kernel.alive() and kernel not in pool.live_kernels()  # type: ignore[attr-defined]


CRASHING_OWNER = """
import sys, time
from omnienv.sandboxes.jupyter import KernelPool
pool = KernelPool(2, base_dir=sys.argv[1])
kernel = pool.acquire()
if sys.argv[2] == "full":  # else the owner dies while the pool's next kernels are starting
    while pool.ready < 2:
        time.sleep(0.01)
print(kernel.process.pid, flush=True)
sys.stdin.read()
"""


def _processes_mentioning(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ")[:300].decode(errors="replace")
    except OSError:
        return f"{pid}: gone"
    return f"{pid} {status['State'].strip()} ppid={status['PPid'].strip()}: {cmdline}"


@pytest.mark.parametrize("when", ["full", "starting"])
def test_kernels_die_with_an_owner_that_crashes_and_their_files_are_swept(when: str) -> None:
    import signal
    import subprocess
    import tempfile

    base = tempfile.mkdtemp(prefix="oj-crash-")
    owner = subprocess.Popen(
        [sys.executable, "-c", CRASHING_OWNER, base, when],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        line = owner.stdout.readline()  # type: ignore[union-attr]
        assert line.strip().isdigit(), line
        assert _processes_mentioning(base)
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        deadline = time.monotonic() + 20
        while _processes_mentioning(base) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = _processes_mentioning(base)
        assert left == [], [_describe(pid) for pid in left]
        # Every owner is dead here, so a folder one died making needs no grace time to be swept.
        assert os.listdir(base) and sweep_stale(base, unlocked_grace=0) >= 1 and os.listdir(base) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(owner.pid, signal.SIGKILL)
        owner.wait()
        for pid in _processes_mentioning(base):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)
