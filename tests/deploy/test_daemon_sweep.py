"""What a killed run leaves of its private Docker daemon is taken down by the next run's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.deploy.daemon import PREFIX, sweep_dead_daemons


def _holding(path: Path) -> subprocess.Popen[bytes]:
    """A process whose command line names ``path``, as a daemon's and its shims' do."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(path)])


def test_a_dead_daemons_folder_mounts_and_processes_are_swept_and_a_running_ones_kept(tmp_path: Path) -> None:
    dead, running, starting = (tmp_path / f"{PREFIX}{name}" for name in ("dead0000", "live0000", "new00000"))
    overlay = dead / "data" / "overlay2"
    overlay.mkdir(parents=True)
    starting.mkdir()  # no pid file yet: a daemon being started
    exited = subprocess.Popen(["true"])
    exited.wait()
    (dead / "dockerd.pid").write_text(str(exited.pid))
    shim, daemon = _holding(dead / "exec"), _holding(running / "data")
    running.mkdir()
    (running / "dockerd.pid").write_text(str(daemon.pid))
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(overlay)], check=True)
    try:
        assert sweep_dead_daemons(str(tmp_path)) == [dead]
        assert not dead.exists() and str(dead) not in Path("/proc/mounts").read_text()
        assert shim.wait(timeout=10) == -9
        assert running.is_dir() and starting.is_dir() and daemon.poll() is None
    finally:
        for process in (shim, daemon):
            process.kill()
            process.wait()
        subprocess.run(["umount", "-l", str(overlay)], capture_output=True)
