"""Attack 3: symlinks the agent plants must never make the host read or write a host file.

``run_command`` once exchanged its command and output through files in a folder the sandbox can
write, and the host followed the symlinks the agent put there: any host file could be read back
as "output" or overwritten with the command's text. The agent plants symlinks in every folder it
can write (where the exchange files were, its home, whatever host folder is mounted writable),
then keeps running commands and ends the episode so that the checker reads its files too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid

from omnienv.core import StepResult
from tests.security._desktop import act, agent, needs_x, served_desktop

pytestmark = needs_x

PLANT = r"""
secret={secret}; victim={victim}; answer={answer}
targets=$(awk '{{print $5}}' /proc/self/mountinfo; ls -d /tmp/omnienv-*/* /tmp/omnienv-* 2>/dev/null)
for d in $targets ~ /tmp /dev/shm; do
  [ -d "$d" ] && [ -w "$d" ] || continue
  for i in $(seq 1 30); do
    for s in out err rc tmp; do ln -sfn "$secret" "$d/$i.$s" 2>/dev/null; done
    ln -sfn "$victim" "$d/$i.sh" 2>/dev/null
  done
done
ln -sfn "$answer" ~/hello.txt
mkdir -p ~/projects && ln -sfn /etc ~/projects/alpha
echo planted
"""


def said(result: StepResult) -> str:
    """Everything a step tells the agent: its observation and any failure message."""
    return result.observation.text + (f"\n{result.failure.message}" if result.failure is not None else "")


def test_planted_symlinks_are_never_followed_by_the_host() -> None:
    token = f"SECRET-{uuid.uuid4().hex}"
    secret = f"/tmp/omnienv-host-secret-{uuid.uuid4().hex}"
    victim = f"/tmp/omnienv-host-victim-{uuid.uuid4().hex}"
    answer = f"/tmp/omnienv-host-answer-{uuid.uuid4().hex}"
    for path, text in ((secret, token + "\n"), (victim, "original\n"), (answer, "hello-rl\n")):
        with open(path, "w") as f:
            f.write(text)
    seen: list[str] = []
    try:
        with served_desktop() as (url, _):

            async def run() -> list[float]:
                rewards = []
                async with agent(url) as client:
                    for task in ("train/terminal-echo", "train/make-directory"):
                        await client.reset(task=task)
                        plant = PLANT.format(secret=secret, victim=victim, answer=answer)
                        for command in (plant, "true", "echo hi", "cat ~/hello.txt", "echo again", "ls ~"):
                            result = await act(client, "run_command", command=command)
                            seen.append(said(result))
                            if result.over or result.failure is not None:
                                break
                        else:
                            result = await act(client, "terminate", status="success")
                            seen.append(said(result))
                        rewards.append(result.reward)
                return rewards

            rewards = asyncio.run(run())
        assert not [text for text in seen if token in text], "the host read a host file through a symlink"
        with open(victim) as f:
            assert f.read() == "original\n", "the host wrote through a symlink"
        assert "planted" in seen[0], seen[0]
        assert "hi" in seen[2] and "again" in seen[4], seen
        assert rewards == [0.0, 0.0], "the checker followed a symlink out of the work dir"
    finally:
        for path in (secret, victim, answer):
            with contextlib.suppress(OSError):
                os.unlink(path)
