"""The persistent sandbox shell: state that outlives a command, interrupts, restarts, bounded output."""

from __future__ import annotations

import resource
import shlex
import signal
import time
from collections.abc import Iterator

import pytest

from omnienv.sandboxes.bubblewrap import Limits, SandboxUnavailableError
from omnienv.sandboxes.sandbox import Sandbox
from omnienv.sandboxes.shell import SandboxShell

ENV = {"HOME": "/home/user", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


@pytest.fixture
def shell(request: pytest.FixtureRequest) -> Iterator[SandboxShell]:
    """A started shell; with the parameter ``"host ignores SIGINT"``, started by a process that
    ignores SIGINT (as a server started in the background of a script does: children inherit it)."""
    sandbox = Sandbox()
    (sandbox.private_dir / "app").mkdir()
    shell = SandboxShell(
        sandbox, workdir="/app", env=ENV, binds=[(str(sandbox.private_dir / "app"), "/app")], output_bytes=4000
    )
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if getattr(request, "param", None) else None
        try:
            shell.start()
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        yield shell
    finally:
        shell.close()
        sandbox.close()
    assert not sandbox.pids(), "a process of the shell outlived it"


def test_directory_variables_and_jobs_persist(shell: SandboxShell) -> None:
    first = shell.run("pwd; export COLOUR=teal; cd /tmp; sleep 60 & echo started", 10)
    assert first.output.startswith("/app\n") and first.output.endswith("started") and first.exit_code == 0
    assert shell.run('echo "no history expansion!"', 10).output == "no history expansion!"
    second = shell.run("echo $COLOUR; pwd; jobs | grep -c sleep", 10)
    assert second.output == "teal\n/tmp\n1"
    assert shell.run("false", 10).exit_code == 1
    assert shell.run("echo oops >&2; exit_code=3; (exit $exit_code)", 10) == type(first)("oops", 3)


def test_a_command_reaches_bash_exactly_as_written_and_starts_no_process_of_its_own(shell: SandboxShell) -> None:
    """Quotes, backslashes, escapes bash would read in ``$'...'``, newlines, tabs, control bytes and
    UTF-8 all arrive as written: a quoted here-document gives them back byte for byte. A NUL, which
    bash cannot hold, is dropped."""
    text = "it's \\\"quoted\\\" \\x41 \\n $'\\t' $HOME `id` !! %s\ttab\r\x01\x7f é ✓ 日本"
    assert shell.run(f"cat <<'END'\n{text}\nEND", 10).output == text
    assert shell.run("printf '%s|' a\\\nb 'c d'", 10).output == "ab|c d|"  # a continued line, as typed
    assert shell.run("echo a\x00b", 10).output == "ab"
    # Only the command's own processes start: ``$$`` of a subshell counts every fork since the last.
    first = int(shell.run("sh -c 'echo $$'", 10).output)
    second = int(shell.run("sh -c 'echo $$'", 10).output)
    assert second - first == 1, f"{second - first - 1} other processes started for one command"


@pytest.mark.parametrize("shell", [None, "host ignores SIGINT"], indirect=True)
def test_a_command_past_its_timeout_is_interrupted_and_background_jobs_survive(shell: SandboxShell) -> None:
    shell.run("sleep 60 &", 10)
    slow = shell.run("echo before; sleep 30; echo never", 0.5)
    assert slow.timed_out and slow.exit_code is None and not slow.restarted
    assert slow.output.strip() == "before", "the rest of an interrupted command line must not run"
    assert shell.run("jobs | grep -c Running", 10).output == "1", "Ctrl-C must spare background jobs"


def test_the_interrupt_spares_a_background_server_that_catches_sigint_itself(shell: SandboxShell) -> None:
    # uvicorn, a test harness: a background job that installs a SIGINT handler of its own
    server = (
        "import signal, time\n"
        "signal.signal(signal.SIGINT, lambda *_: open('/app/got-sigint', 'w').close())\n"
        "open('/app/ready', 'w').close()\n"
        "time.sleep(120)\n"
    )
    shell.run(f"printf %s {shlex.quote(server)} > /tmp/server.py; python3 /tmp/server.py &", 10)
    ready = shell.run("for i in $(seq 100); do [ -e /app/ready ] && break; sleep 0.1; done; ls /app", 20)
    assert "ready" in ready.output
    slow = shell.run("sleep 30", 0.5)
    assert slow.timed_out and not slow.restarted
    after = shell.run("ls /app; jobs | grep -c Running", 10)
    assert "got-sigint" not in after.output, "Ctrl-C for the command reached a background job"
    assert after.output.endswith("1"), after.output


def test_a_marker_line_lost_to_a_ctrl_c_goes_again_and_an_earlier_commands_marker_is_skipped(
    shell: SandboxShell,
) -> None:
    # a Ctrl-C that reaches bash while it reads the marker line throws the line away: here the line
    # is never sent at all, and the interrupt rounds must send it again instead of waiting it out
    shell._number += 1
    shell._send("echo interrupted\n")
    # the first Ctrl-C must find bash waiting for its next line: one that reaches it while it reads
    # this one would cut the line itself
    deadline = time.monotonic() + 10
    with shell._cond:
        while b"interrupted" not in shell._pending + bytes(shell._capture.head) and time.monotonic() < deadline:
            shell._cond.wait(0.05)
    done = shell._interrupt_until_done(time.monotonic() + 5)
    assert done is not None and done[0].text().strip() == "interrupted"
    # the marker sent again may print twice: a copy of an earlier command's never ends a later one
    stale = f"echo; echo {shell._marker} {shell._number} 0"
    later = shell.run(f"{stale}; echo after", 10)
    assert later.output == "after" and later.exit_code == 0 and not later.restarted


def test_a_forged_marker_line_with_a_huge_number_is_output_and_the_reader_reads_on(shell: SandboxShell) -> None:
    # The marker is in the shell's history (``history`` shows every line sent): a command can print it
    # with a number no int() takes (over 4,300 digits), which stopped the reader for good.
    marker = "\"$(history | grep -o '__omnienv_done_[0-9a-f]*__' | head -1)\""
    forged = shell.run(f"printf '\\n%s %s 0\\n' {marker} \"$(printf '9%.0s' $(seq 5000))\"; echo after", 5)
    assert forged.exit_code == 0 and not forged.restarted and forged.output.endswith("after"), forged.output[-200:]
    assert shell._marker in forged.output, "the forged line is the command's output"
    again = shell.run("echo again", 5)
    assert again.output == "again" and not again.restarted


def test_whatever_part_of_a_marker_line_a_ctrl_c_cuts_off_the_marker_sent_again_ends_the_command(
    shell: SandboxShell,
) -> None:
    # A Ctrl-C that reaches bash while it reads the marker line throws away what bash had read, and
    # bash runs the rest as a line of its own; then the marker line goes again. No rest may leave
    # bash inside a quote or a continued line, where it would swallow the marker sent again.
    line = shell._marker_line()
    for cut in range(1, len(line) - 1):
        shell._number += 1
        shell._send(line[cut:])  # what bash reads after the Ctrl-C: the rest of the line
        shell._send(shell._marker_line())
        assert shell._wait_done(time.monotonic() + 5) is not None, f"cut after {line[:cut]!r} lost the marker"
    after = shell.run("echo after", 10)
    assert after.output == "after" and after.exit_code == 0 and not after.restarted


def test_a_command_that_ignores_the_interrupt_or_ends_the_shell_costs_the_shell(shell: SandboxShell) -> None:
    shell.run("export KEPT=1", 10)
    stubborn = shell.run("trap '' INT; sleep 30", 0.5)
    assert stubborn.timed_out and stubborn.restarted
    ended = shell.run("echo bye; exit 7", 10)
    assert ended.restarted and ended.exit_code == 7 and ended.output.startswith("bye")
    after = shell.run("pwd; echo ${KEPT:-gone}", 10)
    assert after.output == "/app\ngone" and not after.restarted


def test_output_is_bounded_and_input_is_empty(shell: SandboxShell) -> None:
    flood = shell.run("head -c 1000000 /dev/zero | tr '\\0' x; echo; echo tail-end", 20)
    assert flood.omitted_bytes > 990_000 and len(flood.output) < 4200
    assert flood.output.startswith("xxx") and flood.output.endswith("tail-end")
    assert shell.run("cat; read line; echo $?", 10).output == "1", "a command must never read the shell's own input"
    syntax = shell.run("if then", 10)
    assert syntax.exit_code == 2 and "syntax error" in syntax.output
    assert shell.run("echo still here", 10).output == "still here"


def test_the_shell_has_no_network_and_no_host_files(shell: SandboxShell) -> None:
    probe = shell.run("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 22), timeout=2)'", 20)
    assert probe.exit_code != 0 and ("refused" in probe.output or "unreachable" in probe.output)
    assert shell.run(
        "ls /root /work /proc/1/environ 2>/dev/null | wc -l; cat /proc/1/environ | tr '\\0' '\\n'", 10
    ).output.split("\n")[0] in ("0", "1")
    assert "SECRET" not in shell.run("env", 10).output


def test_a_sandbox_that_cannot_start_its_program_is_a_typed_failure() -> None:
    sandbox = Sandbox()
    try:
        with pytest.raises(SandboxUnavailableError, match="before it started 'true'"):
            sandbox.spawn(["true"], binds=[("/nonexistent-omnienv-path", "/x")])
        assert not sandbox.pids()
    finally:
        sandbox.close()


def test_one_process_holds_a_hundred_shells_under_a_low_open_file_limit(low_file_limit: int) -> None:
    """Each shell holds three files here (its lock and two pipes): at a soft limit of 256 the 81st
    failed with EMFILE, as a trainer's hundred terminal environments would have."""
    held: list[Sandbox | SandboxShell] = []
    try:
        for _ in range(100):
            sandbox = Sandbox()
            held.append(sandbox)
            shell = SandboxShell(sandbox, workdir="/tmp", env=ENV)
            held.append(shell)
            shell.start()
        assert shell.run("echo the last of 100", timeout=10).output == "the last of 100"
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == low_file_limit
        # what the sandbox runs keeps its own limit, not the one raised here
        assert shell.run("ulimit -n", timeout=10).output == str(Limits().open_files)
    finally:
        for thing in reversed(held):
            thing.close()
