"""A hostile agent looks for the server's secrets from inside its kernel: none may be there."""

from __future__ import annotations

import secrets

import pytest

from tests.security._jupyter import agent, needs_bwrap, served_jupyter

pytestmark = needs_bwrap

SECRET_NAMES = ("OPENAI_API_KEY", "OMNIENV_OPERATOR_TOKEN", "OMNIENV_NEMO_GYM_SECRET", "HF_TOKEN")

# The agent knows what a secret looks like only through the test: it gets the values to search
# for (hex-encoded, so that the cell's own source, kept in IPython's history, does not hold them),
# and reports every place it finds one. Everything it can read is searched except the host's
# read-only system directories (a secret of the server's cannot be in them).
SCAN = r"""
import os
values = [bytes.fromhex(v) for v in {values!r}]
found = []
def check(where, data):
    if any(v in data for v in values):
        found.append(where)
check("os.environ", repr(dict(os.environ)).encode())
check("os.environb", repr(dict(os.environb)).encode())
for pid in filter(str.isdigit, os.listdir("/proc")):
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{{pid}}/{{name}}", "rb") as f:
                check(f"/proc/{{pid}}/{{name}}", f.read())
        except OSError:
            pass
print("proc", found, flush=True)
SKIP = {{"/proc", "/sys", "/dev", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}}
scanned = 0
for top in ("/", "/dev/shm"):
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in SKIP]
        for name in files:
            path = os.path.join(root, name)
            try:
                if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > 4 << 20:
                    continue
                with open(path, "rb") as f:
                    check(path, f.read())
                scanned += 1
            except OSError:
                pass
print("scanned", scanned > 50, "found", found)
"""


def test_the_servers_secrets_are_nowhere_in_the_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {name: f"{name.lower()}-{secrets.token_hex(12)}" for name in SECRET_NAMES}
    for name, value in values.items():
        monkeypatch.setenv(name, value)  # the server process's environment, inherited by whatever it starts
    with served_jupyter(cell_timeout=120) as (url, _), agent(url) as player:
        result = player.run(SCAN.format(values=[v.encode().hex() for v in values.values()]))
        assert result.failure is None, result.failure
        text = result.observation.text
        assert "proc [" in text and "scanned True" in text, text
        assert "found []" in text and "proc []" in text, text
        result = player.shell("env; tr '\\0' '\\n' < /proc/1/environ; cat /proc/self/environ /proc/1/cmdline")
        assert not [name for name, value in values.items() if value in result.observation.text]
