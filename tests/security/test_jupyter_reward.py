"""A losing agent tries to void its episode by killing its own kernel: the episode is scored, not masked.

Failure attribution is one rule: what the agent's code did inside its limits (a kernel that kills
itself, exits, crashes, runs out of its memory or time) ends the episode as an ordinary outcome,
scored by the rubric (0 without an answer), with ``info["ended_by_agent"]["reason"]``; only a
death the host caused is an infrastructure failure, flagged and masked.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import pytest

from omnienv.rollout import plan_episodes, rollout
from omnienv.rollout.llm import ChatPolicy
from omnienv.rollout.scripted_openai import create_app, observations
from omnienv.sandboxes.bubblewrap import Limits
from omnienv.sandboxes.jupyter import KernelPool
from omnienv.server import running
from tests.security._jupyter import (
    agent,
    assert_scored_end,
    jupyter_class,
    needs_bwrap,
    needs_memory_cgroup,
    served_jupyter,
)

pytestmark = needs_bwrap

MiB = 1 << 20
# The address-space limit is above the sandbox's total, so one process can reach the total.
LIMITS = Limits(memory_bytes=4096 * MiB, total_memory_bytes=512 * MiB)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, KernelPool]]:
    with served_jupyter(LIMITS, size=2, cell_timeout=3) as served:
        yield served


SELF_KILLS = [
    pytest.param("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "kernel_died", id="sigkill"),
    pytest.param("import os\nos._exit(3)", "kernel_died", id="exit"),
    pytest.param("import ctypes\nctypes.string_at(0)", "kernel_died", id="segfault"),
    pytest.param("import os\nos.abort()", "kernel_died", id="abort"),
    pytest.param("hog = b'1' * (1024 << 20)", "memory_limit", id="memory", marks=needs_memory_cgroup),
    pytest.param(
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
        "time_limit",
        id="ignores_interrupts",
    ),
]


@pytest.mark.parametrize(("code", "reason"), SELF_KILLS)
def test_killing_its_own_kernel_ends_the_episode_scored(served: tuple[str, KernelPool], code: str, reason: str) -> None:
    url, _ = served
    with agent(url) as player:
        assert player.run("x = 1").failure is None
        result = player.run(code)
        assert_scored_end(result, (reason,))


def test_a_kernel_killed_later_by_the_agents_own_thread_is_scored(served: tuple[str, KernelPool]) -> None:
    url, _ = served
    with agent(url) as player:
        result = player.run("import os, threading, time\nthreading.Timer(0.2, os._exit, (1,)).start()")
        assert result.failure is None and not result.done
        result = player.run("time.sleep(1)\nprint('never')")
        assert_scored_end(result, ("kernel_died",))


def test_a_kernel_the_host_kills_is_an_infrastructure_failure(served: tuple[str, KernelPool]) -> None:
    url, pool = served
    with agent(url) as player:
        assert player.run("x = 1").failure is None
        for kernel in pool.live_kernels():  # the host stops every kernel (as a shutdown would)
            kernel.kill()
        result = player.run("x")
        assert result.failure is not None and "KernelDiedError" in result.failure.message, result
        assert "ended_by_agent" not in result.info


UNREADABLE = [
    pytest.param(
        'get_ipython().kernel.iopub_socket.send_multipart([b"<IDS|MSG>", b"0" * 64, b"{}", b"{}", b"{}", b"{}"])',
        id="unsigned",
    ),
    pytest.param(
        'k = get_ipython().kernel\nm = k.session.msg("stream", {"name": "stdout", "text": "x"})\n'
        'm["parent_header"] = [1, 2]\nk.session.send(k.iopub_socket, m)',
        id="signed_wrong_shape",
    ),
]


@pytest.mark.parametrize("code", UNREADABLE)
def test_a_message_the_host_cannot_read_ends_the_episode_scored(served: tuple[str, KernelPool], code: str) -> None:
    """The agent's code can write to the kernel's sockets: what it sends there must not void its episode."""
    url, _ = served
    with agent(url) as player:
        assert player.run("x = 1").failure is None
        assert_scored_end(player.run(code + "\nimport time\ntime.sleep(1)"), ("output_limit",))


LIFELINE = """import json, os
config = json.loads(open("/proc/self/cmdline", "rb").read().split(b"\\0")[-2])
os.write(os.open(f"/proc/self/fd/{config['lifeline']}", os.O_WRONLY), b"x" * 64)
import time
time.sleep(1)
"""


def test_a_kernel_that_cuts_its_lifeline_ends_only_its_own_episode(served: tuple[str, KernelPool]) -> None:
    """Each kernel has a lifeline of its own: written through ``/proc``, a shared one ended them all."""
    url, _ = served
    with agent(url) as bystander:
        assert bystander.run("y = 2").failure is None
        with agent(url) as attacker:
            assert_scored_end(attacker.run(LIFELINE), ("kernel_died",))
        assert "2" in bystander.run("print(y)").observation.text
        with agent(url) as later:
            assert "3" in later.run("print(3)").observation.text


SURROGATE = r"""k = get_ipython().kernel
parts = k.session.serialize(k.session.msg("stream", {}, parent=k.get_parent("shell")))
at = parts.index(b"<IDS|MSG>")
parts[at + 5] = b'{"name": "stdout", "text": "L\\ud800R"}'
parts[at + 1] = k.session.sign(parts[at + 2 : at + 6])
k.iopub_socket.send_multipart(parts)
import time
time.sleep(0.5)
"""


def test_a_lone_surrogate_in_the_kernels_output_does_not_void_an_in_process_eval(
    served: tuple[str, KernelPool],
) -> None:
    """The kernel's JSON may escape a lone surrogate, which no UTF-8 encoder takes: passed on in the
    observation, the next request to the model failed and the eval flagged the episode, which the
    agent was losing, as a failure."""
    _, pool = served
    seen: list[str] = []

    def responder(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        seen[:] = observations(messages)
        return [("final_answer", {"answer": "0"})] if seen else [("add_and_execute_code_cell", {"code": SURROGATE})]

    env = jupyter_class(pool, 3)
    with running(create_app(responder)) as url:
        policy = lambda: ChatPolicy("scripted", env.tools, base_url=f"{url}/v1", max_retries=0)  # noqa: E731
        summary = rollout(env, policy, plan_episodes(env, 1, "train"))
    assert summary.failures == 0 and summary.scored == 1 and summary.mean_reward == 0.0, summary
    assert seen == ["L\ufffdR"], seen


DEEP = "[" * 1020 + "]" * 1020  # as deep as the host's JSON reader takes, past what repr walks
NESTED = [
    pytest.param("display_data", f'{{"data": {{"text/plain": {DEEP}}}, "metadata": {{}}}}', id="result"),
    pytest.param("stream", f'{{"name": "stdout", "text": {DEEP}}}', id="stream"),
    pytest.param("error", f'{{"ename": {DEEP}, "evalue": {DEEP}, "traceback": [{DEEP}]}}', id="error"),
]


@pytest.mark.parametrize(("kind", "content"), NESTED)
def test_text_nested_past_pythons_stack_is_shown_not_a_void_episode(
    served: tuple[str, KernelPool], kind: str, content: str
) -> None:
    """A field that should be text holds a list nested a thousand deep: ``repr`` raised RecursionError
    on the host, the step failed, and the episode, which the agent was losing, was void."""
    url, _ = served
    send = (
        f"k = get_ipython().kernel\nparts = k.session.serialize(k.session.msg({kind!r}, {{}}, "
        'parent=k.get_parent("shell")))\nat = parts.index(b"<IDS|MSG>")\n'
        f"parts[at + 5] = {content.encode()!r}\n"
        "parts[at + 1] = k.session.sign(parts[at + 2 : at + 6])\nk.iopub_socket.send_multipart(parts)\n"
        "import time\ntime.sleep(0.5)"
    )
    with agent(url) as player:
        result = player.run(send)
        assert result.failure is None and not result.done, result
        assert "[[[[" in result.observation.text, result.observation.text
        assert "4" in player.run("print(2 + 2)").observation.text


def _png(corrupt: bool) -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 48), "red").save(out, "PNG")
    data = bytearray(out.getvalue())
    if corrupt:
        data[data.index(b"IDAT") + 8] ^= 0xFF  # inside the compressed pixels, the header still reads
    return base64.b64encode(bytes(data)).decode()


@pytest.mark.parametrize("png", [base64.b64encode(b"hello").decode(), _png(corrupt=True)], ids=["junk", "corrupt"])
def test_an_image_that_is_no_png_is_not_shown_so_no_model_request_fails(
    served: tuple[str, KernelPool], png: str
) -> None:
    """The agent's code may display any bytes as ``image/png``. A model's API refuses an image it
    cannot decode, and the eval flagged that failed request, and the agent's losing episode, as a
    failure; the endpoint here decodes every image as such an API does."""
    from PIL import Image

    _, pool = served
    images: list[bytes] = []

    def responder(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        for message in messages:
            for part in message["content"] if isinstance(message.get("content"), list) else []:
                if part.get("type") == "image_url":
                    images.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
                    Image.open(io.BytesIO(images[-1])).load()  # raises: the request fails
        if observations(messages):
            return [("final_answer", {"answer": "0"})]
        shown = "\n".join(f"display({{'image/png': {image!r}, 'text/plain': 'x'}}, raw=True)" for image in (png, good))
        return [("add_and_execute_code_cell", {"code": "from IPython.display import display\n" + shown})]

    good = _png(corrupt=False)
    env = jupyter_class(pool, 3)
    with running(create_app(responder)) as url:
        policy = lambda: ChatPolicy("scripted", env.tools, base_url=f"{url}/v1", max_retries=0)  # noqa: E731
        summary = rollout(env, policy, plan_episodes(env, 1, "train"))
    assert summary.failures == 0 and summary.scored == 1 and summary.mean_reward == 0.0, summary
    assert images == [base64.b64decode(good)], images  # a real PNG still goes through
