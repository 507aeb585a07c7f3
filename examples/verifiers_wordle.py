"""Wordle in verifiers: ``vf-eval`` plays it through verifiers' own model client, to a win.

The model is the scripted solver behind an OpenAI-compatible server
(``scripted_openai_server.py``), so no GPU or API key is needed; point ``--client.base-url`` /
``-b`` at a real server to evaluate a real model. The installed verifiers picks the API:

    .venvs/verifiers/bin/python examples/verifiers_wordle.py      # verifiers 0.4: v1 taskset
    .venvs/verifiers03/bin/python examples/verifiers_wordle.py    # verifiers 0.3: classic API

Both load the environment by name, ``omnienv-verifiers``, with Wordle's ``test`` split.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from scripted_openai_server import MODEL, serving

EPISODES = 2


def vf_eval_command(base_url: str, out: Path) -> list[str]:
    vf_eval = str(Path(sys.executable).parent / "vf-eval")
    if tuple(int(p) for p in version("verifiers").split(".")[:2]) >= (0, 4):
        return [
            vf_eval,
            "omnienv-verifiers",
            "--env.taskset.env",
            "wordle",
            "--env.taskset.split",
            "test",
            "--env.agent.harness.id",
            "null",
            "--env.agent.runtime.type",
            "subprocess",
            "-m",
            MODEL,
            "--client.base-url",
            base_url,
            "--client.api-key-var",
            "SOLVER_KEY",
            "-n",
            str(EPISODES),
            "-r",
            "1",
            "--no-push",
            "--no-rich",
            "-o",
            str(out),
        ]
    return [
        vf_eval,
        "omnienv-verifiers",
        "-a",
        json.dumps({"env": "wordle", "split": "test"}),
        "-m",
        MODEL,
        "-b",
        base_url,
        "-k",
        "SOLVER_KEY",
        "-n",
        str(EPISODES),
        "-r",
        "1",
        "--disable-tui",
        "-s",
        "-o",
        str(out),
    ]


def rewards(out: Path) -> list[float]:
    """Each rollout's reward, from the files vf-eval wrote."""
    found = []
    for path in sorted(out.rglob("traces.jsonl")):  # v1: one episode per line
        for line in path.read_text().splitlines():
            for trace in json.loads(line)["traces"]:
                found.append(sum(r["score"] * r["weight"] for r in trace["rewards"].values() if r))
    for path in sorted(out.rglob("results.jsonl")):  # classic: one rollout per line
        found += [json.loads(line)["reward"] for line in path.read_text().splitlines()]
    return found


def main() -> None:
    with serving() as base_url, tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        env = {**os.environ, "SOLVER_KEY": "unused", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        run = subprocess.run(
            vf_eval_command(base_url, out), env=env, cwd=tmp, capture_output=True, text=True, timeout=600
        )
        if run.returncode != 0:
            sys.exit(f"vf-eval failed ({run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        scores = rewards(out)
    print(f"verifiers {version('verifiers')}: {len(scores)} rollouts, rewards {[round(s, 3) for s in scores]}")
    won = len(scores) == EPISODES and all(score > 1.0 for score in scores)
    print("all won" if won else "not all won")
    sys.exit(0 if won else 1)


if __name__ == "__main__":
    main()
