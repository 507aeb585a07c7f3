"""``omnienv-shell``: a stand-in for ``sh`` that runs each command in an episode's sandbox.

A command-line harness runs its commands through a shell (``$SHELL -c CMD``, or ``bash -c CMD``
found on its PATH). The runner puts this shim first on the harness's PATH and in ``$SHELL``, so
``omnienv-shell -c "ls"`` sends ``ls`` to the episode's shell relay, which runs it with the
environment's shell tool inside the sandbox; the shim prints the output and exits with the
command's exit code. Nothing runs on the host but this file.

It is standard library only, on purpose: the runner copies it into each episode's ``bin/``
directory with the relay's URL written in (so a harness that clears its children's environment
still reaches it), and it starts in milliseconds with ``python -I -S``. Installed as a console
script it reads the URL from ``$OMNIENV_SHELL_URL`` instead. :func:`run_command` is the client the
mini-swe-agent environment class uses too.

Exit codes of its own: 126 when the relay cannot be reached or refuses the call, 2 for bad
arguments (as ``sh`` gives).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import urllib.error
import urllib.request
from typing import Any

__all__ = ["URL_VARIABLE", "baked", "main", "run_command"]

URL_VARIABLE = "OMNIENV_SHELL_URL"
TIMEOUT_VARIABLE = "OMNIENV_SHELL_TIMEOUT"
UNREACHABLE = 126
_BAKED_URL: str | None = None  # the runner's per-episode copy has the relay URL here
_SLACK_S = 60.0
"""How much longer than the command's own limit the shim waits for the relay's answer."""


def run_command(url: str, command: str, timeout: float | None = None) -> dict[str, Any]:
    """Run ``command`` through the relay at ``url``: ``{"output", "exit_code", "over", "note"}``.

    Raises ``OSError`` (``urllib.error.URLError`` included) when the relay cannot be reached."""
    body = json.dumps({"command": command, "timeout": timeout}).encode()
    request = urllib.request.Request(
        f"{url.rstrip('/')}/run", body, {"content-type": "application/json"}, method="POST"
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the relay is local: no proxy
    wait = (timeout if timeout is not None else 600.0) + _SLACK_S
    try:
        with opener.open(request, timeout=wait) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")
        raise OSError(f"the shell relay refused the command ({exc.code}): {detail}") from None
    if not isinstance(answer, dict) or "exit_code" not in answer:
        raise OSError(f"the shell relay answered something else: {str(answer)[:200]}")
    return answer


def _command(argv: list[str]) -> str | None:
    """The command line ``sh``'s arguments name: ``-c CMD [NAME ARGS...]``, a script file, or stdin.

    Options a harness adds (``-l``, ``-e``, ``--login``, ``-lc``) are accepted and ignored, except
    ``-c``; positional arguments after ``-c CMD NAME`` become ``$1...``. None for bad arguments."""
    inline = False
    rest = list(argv)
    while rest and rest[0][:1] in ("-", "+") and rest[0] not in ("-", "+"):
        flag = rest.pop(0)
        if flag == "--":
            break
        if flag in ("-o", "+o", "-O", "+O") and rest:  # `bash -o pipefail -c ...`: the option's value
            rest.pop(0)
        elif flag.startswith("-") and not flag.startswith("--") and "c" in flag[1:]:
            inline = True
    if inline:
        if not rest:
            return None
        command, arguments = rest[0], rest[2:]
        if arguments:
            command = f"set -- {shlex.join(arguments)}\n{command}"
        return command
    if rest and rest[0] != "-":
        try:
            with open(rest[0], encoding="utf-8") as script:
                return script.read()
        except OSError as exc:
            print(f"omnienv-shell: {exc}", file=sys.stderr)
            return None
    return sys.stdin.read()


def baked(url: str, python: str) -> str:
    """This file as an executable script for one episode: run by ``python`` (``-I -S``: no site
    packages, no user environment), with the relay's ``url`` written in."""
    with open(__file__, encoding="utf-8") as source:
        text = source.read()
    line = next(line for line in text.splitlines() if line.startswith("_BAKED_URL: "))
    return f"#!{python} -IS\n" + text.replace(line, f"_BAKED_URL: str | None = {url!r}", 1)


def main(argv: list[str] | None = None, url: str | None = None) -> int:
    """Run the command ``argv`` names in the episode's sandbox; its exit code is ours."""
    url = url or _BAKED_URL or os.environ.get(URL_VARIABLE)
    if not url:
        print(f"omnienv-shell: no relay: ${URL_VARIABLE} is not set (the agent runner sets it)", file=sys.stderr)
        return UNREACHABLE
    command = _command(sys.argv[1:] if argv is None else argv)
    if command is None:
        print("usage: omnienv-shell [-c COMMAND [NAME [ARG...]] | SCRIPT]", file=sys.stderr)
        return 2
    raw = os.environ.get(TIMEOUT_VARIABLE)
    try:
        answer = run_command(url, command, float(raw) if raw else None)
    except (OSError, ValueError) as exc:
        print(f"omnienv-shell: {exc}", file=sys.stderr)
        return UNREACHABLE
    sys.stdout.write(str(answer.get("output", "")))
    sys.stdout.flush()
    if answer.get("note"):
        print(f"omnienv-shell: {answer['note']}", file=sys.stderr)
    return int(answer["exit_code"])


if __name__ == "__main__":
    raise SystemExit(main())
