"""A sandbox's storage is capped in files, not only in bytes: an empty file takes no bytes, and an
agent's millions of them were each an inode in the host's memory and an entry of the host's copy."""

from __future__ import annotations

import subprocess

from omnienv.sandboxes.bubblewrap import Limits
from omnienv.sandboxes.sandbox import Sandbox

FLOOD = """
import os, sys
for directory in sys.argv[1:]:
    os.makedirs(directory, exist_ok=True)
    made = 0
    try:
        while True:
            os.close(os.open(f"{directory}/{made}", os.O_CREAT | os.O_WRONLY, 0o644))
            made += 1
    except OSError as exc:
        print(directory, made, exc.strerror)
"""
RUN = "/opt/run"


def test_files_past_the_storages_cap_fail_inside_with_enospc_and_the_sandbox_goes_on() -> None:
    sandbox = Sandbox(Limits(work_files=300, run_files=40))
    try:
        assert sandbox.work_capped and sandbox.run_capped, "mounting a tmpfs needs root or CAP_SYS_ADMIN"
        flood = sandbox.spawn(
            ["python3", "-I", "-c", FLOOD, "flood", f"{RUN}/flood"],
            env={"PATH": "/usr/bin:/bin"},
            binds=[(str(sandbox.run_dir), RUN)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        out, _ = flood.communicate(timeout=60)
        lines = [line.split(" ", 2) for line in out.decode().splitlines()]
        made = {directory: int(count) for directory, count, _ in lines}
        assert [error for _, _, error in lines] == ["No space left on device"] * 2, out
        assert 280 <= made["flood"] < 300 and 30 <= made[f"{RUN}/flood"] < 40, made  # less the dirs they are in
        again = sandbox.spawn(
            ["sh", "-c", "rm -r flood && touch after && ls"],
            env={"PATH": "/usr/bin:/bin"},
            stdout=subprocess.PIPE,
        )
        listed, _ = again.communicate(timeout=60)
        assert again.returncode == 0 and listed.split() == [b"after"], listed
    finally:
        sandbox.close()
    assert not sandbox.root.exists()
