"""Sandboxed Jupyter kernels: real bubblewrap, real ipykernel, real sockets on 127.0.0.1.

What an agent's code gets back (outputs, shell commands, files it is given), and a kernel's end:
closed, dropped, or left by an owner that crashed. What the sandbox keeps out is in
``test_jupyter_isolation.py``; runaway code and dying kernels are in ``test_jupyter_runaway.py``.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import shutil
import sys
import threading
import time

import pytest

from omnienv.sandboxes.bubblewrap import HOME
from omnienv.sandboxes.cells import BoundedText, OutputLimits
from omnienv.sandboxes.jupyter import KernelDiedError, KernelPool, open_code_sandbox, sweep_stale
from tests.sandboxes.jupyter_sandboxes import (
    ROOT,
    open_sandbox,
    run,
    sandbox_run,
)


def test_cells_show_stdout_stderr_results_and_errors(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await open_sandbox(pool)
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
        sandbox = await open_sandbox(pool)
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


def test_outputs_are_bounded_and_images_are_png(pool: KernelPool) -> None:
    limits = OutputLimits(stream_chars=2_000, traceback_chars=1_500, images=2)

    async def go() -> None:
        sandbox = await open_sandbox(pool, limits=limits)
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


def test_a_cells_images_are_decoded_off_the_event_loop(pool: KernelPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checking a PNG decodes it, milliseconds for a plot: on the event loop, every session's step
    would wait for it."""
    from omnienv.sandboxes.jupyter import collector

    threads: list[threading.Thread] = []

    def recorded(raw: bytes) -> bool:
        threads.append(threading.current_thread())
        return check(raw)

    check = collector._decodes_as_png
    monkeypatch.setattr(collector, "_decodes_as_png", recorded)

    async def go() -> threading.Thread:
        sandbox = await open_sandbox(pool)
        try:
            out = await sandbox.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
            assert len(out.images) == 1, out
        finally:
            await sandbox.close()
        return threading.current_thread()

    loop_thread = run(go())
    assert len(threads) == 1 and threads[0] is not loop_thread


def test_the_kernel_packs_messages_with_orjson_and_builds_no_debug_log_records(pool: KernelPool) -> None:
    """Two costs of every cell in the kernel: json's encoder (jupyter_client takes orjson when the
    kernel can import it) and log records made at DEBUG only for a WARNING handler to drop them."""
    code = "from ipykernel.kernelapp import IPKernelApp\napp = IPKernelApp.instance()\n"
    out = sandbox_run(pool, code + "print(app.session.pack.__name__, app.log.isEnabledFor(10))")
    assert out.stdout.strip() == "orjson_packer False", out


def test_write_file_stays_in_the_work_dir(pool: KernelPool) -> None:
    async def go() -> None:
        sandbox = await open_sandbox(pool)
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
        sandbox = await open_sandbox(pool)
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


def test_a_cell_has_its_images_decoded_at_most_as_often_as_it_may_show_them() -> None:
    """Each image is decoded to be checked, which costs the host far more than the kernel's message:
    a cell that displays PNGs broken at their end decodes no more of them than it could show."""
    from PIL import Image

    from omnienv.sandboxes.jupyter.collector import OutputCollector

    out = io.BytesIO()
    Image.new("RGB", (32, 32), "blue").save(out, "PNG")
    good = out.getvalue()
    broken = good[: good.index(b"IDAT") + 8] + bytes(len(good) - good.index(b"IDAT") - 8)
    collect = OutputCollector(OutputLimits(images=2))
    for image in (broken, broken, good):
        collect.add({"msg_type": "display_data", "content": {"data": {"image/png": base64.b64encode(image).decode()}}})
    output = collect.output()
    assert output.images == [] and "3 image(s) not shown" in output.notes[0], output.notes


def test_the_e2b_backend_is_used_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnienv.sandboxes.e2b import E2BError

    monkeypatch.delenv("E2B_API_KEY", raising=False)
    with pytest.raises(E2BError, match="E2B_API_KEY is not set"):
        run(open_code_sandbox("e2b"))
    with pytest.raises(ValueError, match="use 'local' or 'e2b'"):
        run(open_code_sandbox("cloud"))


def test_the_e2b_backend_reads_what_its_kernel_sends_as_a_local_kernels_output_is_read() -> None:
    """The E2B kernel is the agent's as much as a local one: text nested past Python's stack, a lone
    surrogate, bytes that are no PNG and megabytes of error voided an episode or reached the model.
    E2B's service cannot be reached from here, so its SDK's sandbox is stood in for by an object
    of the same shape; what is tested is omnienv's reading of it."""
    from types import SimpleNamespace

    from omnienv.sandboxes.e2b import E2BSandbox

    logs = SimpleNamespace(stdout=["a \ud800 b\n"], stderr=["x" * 1_000_000])
    not_png = base64.b64encode(b"hello").decode()
    results = [SimpleNamespace(png=not_png, text=None), SimpleNamespace(png=None, text="42")]
    error = SimpleNamespace(name="E" * 10_000, value="v" * 1_000_000, traceback="\x1b[31mtb\x1b[0m")
    execution = SimpleNamespace(logs=logs, results=results, error=error, execution_count=3)

    class StandIn:
        async def run_code(self, code: str, timeout: float) -> SimpleNamespace:
            return execution

    out = run(E2BSandbox(StandIn(), OutputLimits()).run_code("anything"))
    assert out.stdout == "a \ufffd b\n" and len(out.stderr) < 30_000 and out.results == ["42"]
    assert out.images == [] and "1 image(s) not shown" in " ".join(out.notes)
    assert out.error is not None and len(out.error.name) <= 300 and len(out.error.value) <= 3_000
    assert out.error.traceback == "tb" and out.execution_count == 3


def test_a_sandbox_dropped_without_close_frees_its_kernel(pool: KernelPool) -> None:
    import gc

    async def go() -> object:
        sandbox = await open_sandbox(pool)
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
        # Gone only when two polls in a row find none: a process in the middle of exec (a kernel's
        # launcher the pool forked just before the owner died) shows an empty command line.
        deadline, quiet = time.monotonic() + 20, 0
        while quiet < 2 and time.monotonic() < deadline:
            quiet = 0 if _processes_mentioning(base) else quiet + 1
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
