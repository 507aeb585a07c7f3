"""openreward's own client plays a task on an ORS server: what the source itself gives.

Run inside openreward's virtualenv (``python tests/catalog/ors_source_play.py URL ENV SPLIT INDEX``):
one game of Wordle, a word the game refuses first and then omnienv's solver, with the SDK's own
session (``environments.get(...).session(split=, index=)``, ``call_tool``). It prints one JSON line:
each move with the reward and ``finished`` the server gave it, and the text of each answer.
tests/peers/test_catalog_ors.py replays the same moves on the same task through the ORS import,
over ``/ws`` from ``omnienv serve`` and through the Gymnasium dialect, and compares.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"  # no PyPI query at import
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from openreward import OpenReward

from omnienv.envs.wordle.solver import next_guess, read_marks

REFUSED = "qqqqq"
"""Not a word: the game answers it (reward 0, not finished) without counting a guess."""


def main(url: str, env_name: str, split: str, index: int) -> None:
    client = OpenReward(api_key="local", base_url=url)
    env = client.environments.get(env_name, variant=env_name, base_url=url)
    moves: list[dict[str, object]] = []
    history: list[tuple[str, str]] = []
    with env.session(split=split, index=index) as session:
        prompt = session.get_prompt()[0].text
        for _ in range(8):
            word = REFUSED if not moves else next_guess(history)
            output = session.call_tool("guess", {"word": word})
            text = output.blocks[0].text
            moves.append({"word": word, "reward": output.reward, "finished": output.finished, "text": text})
            marks = read_marks(text)
            if marks is not None:
                history.append(marks)
            if output.finished:
                break
    print(json.dumps({"prompt": prompt, "moves": moves}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
