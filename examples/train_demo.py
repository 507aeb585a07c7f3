"""Watch a model learn through omnienv: TRL's GRPOTrainer on the Doors environment, on a CPU.

::

    python examples/train_demo.py            # or `make train-demo`

Doors (``omnienv/envs/doors.py``) is a two-step game: ``read_clue`` describes the door that hides
a prize, ``open_door`` opens one. A tiny model is built on the spot (``tiny_model.py``: nothing is
downloaded) and taught the *format* of the two calls, every door following every clue equally
often, so it starts at chance: one right door in four. GRPO alone then teaches it to open the door
the clue points to, from 0.25 to about 1 in 60 steps.

It trains twice from the same start, side by side on one core each: with the environment in this
process, and, in a child process, against a real ``omnienv serve doors`` started on a free local
port (and stopped afterwards). Each run writes one JSON line per training step, ``{"kind":
"train_step", "step": 1, "reward": 0.25, ...}`` followed by TRL's own metrics, to
``OUTPUT_DIR/<run>.jsonl``; the reward curves go to ``OUTPUT_DIR/reward.png``. Needs
``pip install 'omnienv[trl,server]'`` (and ``torch``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from tiny_model import Example, build_tiny_model, call_text, render, tool_reply
from transformers import PreTrainedTokenizerFast, PrinterCallback, Qwen3ForCausalLM, TrainerCallback, set_seed
from trl import GRPOConfig, GRPOTrainer

from omnienv.dialects.trl import dataset, environment_factory
from omnienv.envs.doors import CLUES, DOORS, PROMPT, clue_text

CHANCE = 1 / len(DOORS)
SERVER_START_S = 60.0


def doors_episodes(tools: list[Any]) -> list[Example]:
    """The format, never the answer: whole episodes in which every door follows every clue."""
    prompt = render([{"role": "user", "content": PROMPT}], tools)
    out = []
    for prize in DOORS:
        for door in DOORS:
            result = "You found the prize!" if door == prize else "This door is empty."
            out.append(
                [
                    (prompt, False),
                    (call_text("read_clue", {}), True),
                    (tool_reply("read_clue", clue_text(prize)), False),
                    (call_text("open_door", {"door": door}), True),
                    (tool_reply("open_door", result), False),
                    ("<|im_end|>", True),
                ]
            )
    return out


class WriteSteps(TrainerCallback):
    """One JSON line per training step: kind, step, the batch's mean reward, then TRL's metrics.

    TRL's ``reward`` is already the mean over the scored rollouts only (a failed episode's reward
    is None, left out), and None when no rollout of the step was scored.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("")

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        if not logs or "reward" not in logs:  # the end-of-training summary has no reward
            return
        clean = {key: None if isinstance(v, float) and math.isnan(v) else v for key, v in logs.items()}
        line = {"kind": "train_step", "step": state.global_step, "reward": clean.pop("reward"), **clean}
        with self.path.open("a") as out:
            out.write(json.dumps(line) + "\n")
        print(f"{self.path.stem} step {state.global_step:3d} reward {_show(line['reward'])}", flush=True)


def train(env: str, model_dir: Path, log: Path, args: argparse.Namespace) -> list[float | None]:
    """One GRPO run from the tiny model in ``model_dir``; the mean reward of each step."""
    set_seed(args.seed)
    config = GRPOConfig(
        output_dir=str(args.output_dir / "trainer"),
        use_cpu=True,
        max_steps=args.steps,
        per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations,
        max_completion_length=64,
        max_tool_calling_iterations=2,
        beta=0.0,  # no reference model: the warm-up's policy is only a starting point
        learning_rate=args.learning_rate,
        lr_scheduler_type="linear",  # large steps while the policy is unsure, small ones to settle it
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        seed=args.seed,
        temperature=1.0,
        shuffle_dataset=False,  # Doors' tasks come in blocks with each door once: a step's prompts cover every door
    )
    trainer = GRPOTrainer(
        model=Qwen3ForCausalLM.from_pretrained(model_dir),
        processing_class=PreTrainedTokenizerFast.from_pretrained(model_dir),
        args=config,
        environment_factory=environment_factory(env, name="Doors"),
        train_dataset=dataset(env, "train"),
        callbacks=[WriteSteps(log)],
    )
    trainer.remove_callback(PrinterCallback)  # WriteSteps prints one short line per step instead
    trainer.train()
    return _rewards(log)


def _rewards(log: Path) -> list[float | None]:
    return [json.loads(line)["reward"] for line in log.read_text().splitlines()]


@contextmanager
def served(env: str) -> Iterator[str]:
    """``omnienv serve ENV`` on a free local port, healthy before use and always stopped after."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "omnienv.cli.main", "serve", env, "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    print(f"served by omnienv serve (pid {proc.pid}) at {url}", flush=True)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while not _healthy(url):
            if proc.poll() is not None:
                errors = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"omnienv serve exited with {proc.returncode}: {errors[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"omnienv serve was not healthy within {SERVER_START_S:g} s")
            time.sleep(0.05)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def plot(curves: dict[str, list[float | None]], path: Path) -> None:
    """The reward of every step, per run, against chance (a random door) and the optimum."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4), dpi=100)
    for width, (name, rewards) in zip((5, 1.5), curves.items(), strict=False):  # the second drawn over the first
        steps = [i + 1 for i, r in enumerate(rewards) if r is not None]
        axes.plot(steps, [r for r in rewards if r is not None], linewidth=width, alpha=0.7, label=name)
    axes.axhline(CHANCE, color="grey", linestyle="--", label="chance (a random door)")
    axes.axhline(1.0, color="grey", linestyle=":", label="optimum")
    axes.set(
        xlabel="GRPO step",
        ylabel="mean reward",
        ylim=(-0.05, 1.05),
        title="Doors: a tiny model learns to read the clue",
    )
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)


def window_mean(rewards: list[float | None], window: int) -> float:
    scored = [r for r in rewards if r is not None]
    return sum(scored[:window]) / len(scored[:window]) if window > 0 else math.nan


def _show(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", type=Path, default=Path("runs/train-demo"))
    parser.add_argument("--runs", choices=["both", "in-process", "served"], default="both")
    parser.add_argument("--steps", type=int, default=60, help="GRPO optimizer steps per run")
    parser.add_argument("--prompts", type=int, default=4, help="prompts (tasks) per step, a multiple of 4")
    parser.add_argument(
        "--generations", type=int, default=32, help="rollouts per prompt (GRPO's group); 16 often leave a clue unlearnt"
    )
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--sft-steps", type=int, default=400, help="supervised steps teaching the call format")
    parser.add_argument("--window", type=int, default=10, help="steps averaged for the first and last reward")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trained-model", type=Path, help=argparse.SUPPRESS)  # the served run's child: train only
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stop runs the finally blocks: no server left behind
    torch.set_num_threads(1)  # a tiny model gains nothing from threads, and loses a lot on a busy CPU
    args.output_dir.mkdir(parents=True, exist_ok=True)
    if args.trained_model is not None:
        run_served(args.trained_model, args)
        return
    started = time.perf_counter()

    model_dir = args.output_dir / "tiny-model"
    set_seed(args.seed)
    Doors = environment_factory("doors")
    tools = [Doors.open_door, Doors.read_clue]  # type: ignore[attr-defined]  # TRL lists them by name
    build_tiny_model(
        model_dir,
        doors_episodes(tools),
        [PROMPT, *CLUES.values()],
        args.sft_steps,
        vocab_size=900,
        whole_phrases=True,
        initializer_range=0.3,  # sharper attention from the start, so the clue reaches the door choice sooner
    )
    print(f"built the tiny model in {time.perf_counter() - started:.0f} s", flush=True)

    curves: dict[str, list[float | None]] = {}
    if args.runs == "both":  # side by side, one core each: a child process trains against the server
        command = [sys.executable, __file__, *sys.argv[1:], "--trained-model", str(model_dir)]
        child = subprocess.Popen(command)
        try:
            curves["in-process"] = train("doors", model_dir, args.output_dir / "in-process.jsonl", args)
            if child.wait() != 0:
                raise SystemExit(f"the served run exited with {child.returncode}")
        finally:
            if child.poll() is None:
                child.terminate()
                child.wait()
        curves["served"] = _rewards(args.output_dir / "served.jsonl")
    elif args.runs == "in-process":
        curves["in-process"] = train("doors", model_dir, args.output_dir / "in-process.jsonl", args)
    else:
        curves["served"] = run_served(model_dir, args)
    png = args.output_dir / "reward.png"
    plot(curves, png)
    for name, rewards in curves.items():
        first, last = window_mean(rewards, args.window), window_mean(rewards[::-1], args.window)
        print(f"RESULT {name}: mean reward {first:.3f} over the first {args.window} steps, {last:.3f} over the last")
    print(f"reward curve: {png}\nlog: {args.output_dir}/*.jsonl\ntook {time.perf_counter() - started:.0f} s")


def run_served(model_dir: Path, args: argparse.Namespace) -> list[float | None]:
    with served("doors") as url:
        return train(url, model_dir, args.output_dir / "served.jsonl", args)


if __name__ == "__main__":
    main()
