"""A private Docker daemon and a locally made base image, for the image tests.

No daemon runs on these machines by default and no registry is reachable, so the tests start
``dockerd`` themselves in a folder of their own (no bridge, no iptables rules, no ip_forward
change; builds and containers use the host's network and serve on 127.0.0.1), make a Debian base
with ``debootstrap``, and take everything down afterwards: containers, images, the daemon, its
mounts and its folder, even when a test failed. A run that was killed cannot; the next run takes
down what it left (:func:`sweep_dead_daemons`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

BASE_IMAGE = "omnienv-test-base:bookworm"
PREFIX = "omnienv-docker-"
MIRROR = "http://deb.debian.org/debian"
READY_DEADLINE_S = 60.0


def _answering(env: dict[str, str]) -> bool:
    return subprocess.run(["docker", "info"], env=env, capture_output=True, timeout=20).returncode == 0


@contextlib.contextmanager
def private_daemon() -> Iterator[dict[str, str]]:
    """A dockerd of its own; yields the environment (``DOCKER_HOST``) that reaches it."""
    for program in ("dockerd", "docker", "debootstrap"):
        assert shutil.which(program), f"{program} is missing: run 'make system-deps' (docker.io, debootstrap)"
    sweep_dead_daemons()
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    socket = root / "docker.sock"
    env = {**os.environ, "DOCKER_HOST": f"unix://{socket}"}
    # nice: the builds run while the rest of the suite does, whose timing-sensitive tests come first
    command = [
        "nice", "-n", "19", "dockerd", "--bridge=none", "--iptables=false", "--ip-forward=false", "--ip-masq=false",
        f"--data-root={root / 'data'}", f"--exec-root={root / 'exec'}", f"--pidfile={root / 'dockerd.pid'}",
        f"-H=unix://{socket}",
    ]  # fmt: skip
    log = open(root / "dockerd.log", "wb")
    daemon = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while not _answering(env):
            assert daemon.poll() is None, f"dockerd exited: {(root / 'dockerd.log').read_text()[-2000:]}"
            assert time.monotonic() < deadline, "dockerd did not answer within a minute"
            time.sleep(0.2)
        yield env
    finally:
        _remove_everything(env)
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        _unmount_and_remove(root)


def sweep_dead_daemons(base: str | None = None) -> list[Path]:
    """Take down what killed runs left of their private daemons: the folders whose ``dockerd`` is
    gone, with their mounts (overlays, network namespaces), their layers (gigabytes) and any process
    still running from them (containerd, shims). Returns the folders removed."""
    removed = []
    for root in sorted(Path(base or tempfile.gettempdir()).glob(f"{PREFIX}*")):
        if root.is_dir() and not root.is_symlink() and not _daemon_running(root):
            _unmount_and_remove(root)
            removed.append(root)
    return removed


def _daemon_running(root: Path) -> bool:
    try:
        pid = int((root / "dockerd.pid").read_text())
    except (OSError, ValueError):  # no pid file yet (a daemon starting), or the folder is half made
        return time.time() - root.stat().st_mtime < READY_DEADLINE_S * 10
    try:
        return str(root) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:  # gone (a pid reused by another program does not name this folder)
        return False


def _unmount_and_remove(root: Path) -> None:
    for pid in _processes_naming(root):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for mounted in (root / "exec" / "netns" / "default", root / "data" / "overlay2"):
        subprocess.run(["umount", "-l", str(mounted)], capture_output=True)
    subprocess.run(["sh", "-c", f"grep -o ' {root}[^ ]*' /proc/mounts | xargs -r -n1 umount -l"], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def _processes_naming(root: Path) -> list[int]:
    """Processes whose command line names ``root`` (a daemon's containerd and shims outlive it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if str(root).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def _remove_everything(env: dict[str, str]) -> None:
    def docker(*args: str) -> str:
        done = subprocess.run(["docker", *args], env=env, capture_output=True, text=True, timeout=120)
        return done.stdout

    containers = docker("ps", "-aq").split()
    if containers:
        docker("rm", "-f", *containers)
    images = docker("images", "-aq").split()
    if images:
        docker("rmi", "-f", *images)


def make_base_image(env: dict[str, str]) -> str:
    """A minimal Debian bookworm image made here (no registry): debootstrap, then docker import."""
    with tempfile.TemporaryDirectory(prefix="omnienv-rootfs-") as rootfs:
        done = subprocess.run(
            ["nice", "-n", "19", "debootstrap", "--variant=minbase", "bookworm", rootfs, MIRROR],
            capture_output=True,
            text=True,
            timeout=2400,  # niced: while the suite keeps both cores busy it gets what they leave
        )
        assert done.returncode == 0, f"debootstrap failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(Path(rootfs) / cache, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["docker", "import", "-", BASE_IMAGE], stdin=tar.stdout, env=env, capture_output=True)
        tar.wait()
        assert imported.returncode == 0, imported.stderr.decode()[-2000:]
    return BASE_IMAGE


def pip_ca_bundle() -> Path | None:
    """The CA bundle pip trusts on this machine (a TLS-inspecting proxy's), for pip inside builds."""
    found = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.cert"], capture_output=True, text=True
    )
    for candidate in (os.environ.get("PIP_CERT"), found.stdout.strip(), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None
