"""What a sandboxed Jupyter kernel cannot reach: the host's network, files, packages and environment.

An agent's code is untrusted, so each of these is tried from inside a real sandbox (bubblewrap,
ipykernel) rather than read off the command line; the command line and a missing bubblewrap are
checked too, since the jail is only as good as the ``bwrap`` call that makes it.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

import omnienv
from omnienv.sandboxes.bubblewrap import HOME, Limits, SandboxUnavailableError, bwrap_command
from omnienv.sandboxes.jupyter import KernelPool, SandboxStartError
from tests.sandboxes.jupyter_sandboxes import (
    ROOT,
    open_sandbox,
    run,
    sandbox_run,
)


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
        sandbox = await open_sandbox(pool)
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
