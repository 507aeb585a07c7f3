"""Train a model to play Wordle with TRL's GRPOTrainer, the environment being omnienv's Wordle.

With a GPU and a chat model that calls tools (Qwen3, Llama 3.1...)::

    python examples/train_wordle_grpo.py --model Qwen/Qwen3-0.6B --steps 200
    python examples/train_wordle_grpo.py --model Qwen/Qwen3-0.6B --vllm colocate   # vLLM generates

``scripts/train_gpu.sh`` runs it end to end against a served Wordle (docs/trl.md). On any laptop,
with nothing downloaded: ``--tiny`` builds a tokenizer and a random 100k-parameter Qwen3-shaped
model on the spot, teaches it the tool-call format with a few supervised steps, then runs GRPO on
the CPU::

    python examples/train_wordle_grpo.py --tiny --steps 2

``--env http://127.0.0.1:8000`` trains against a Wordle served by ``omnienv serve wordle`` instead
of one in this process; ``--also http://127.0.0.1:8000`` trains on both at once (TRL's dict
``environment_factory``: each row names its environment, each environment owns its rewards).
``--async-grpo`` trains with TRL's experimental ``AsyncGRPOTrainer`` instead: generation runs
without pause on vLLM's own server at ``--vllm-server-url`` (another GPU; TRL sends it the weights
over NCCL, so ``VLLM_SERVER_DEV_MODE=1 vllm serve MODEL --weight-transfer-config
'{"backend":"nccl"}'``) while the trainer updates them, and the environments run in a process it
spawns (``scripts/train_gpu.sh`` with ``ASYNC=1``). Needs ``pip install 'omnienv[trl]'`` (and ``torch``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import torch
from tiny_model import build_tiny_model, call_text, called, turn
from transformers import PreTrainedTokenizerFast, Qwen3ForCausalLM, TrainerCallback, set_seed
from trl import GRPOConfig, GRPOTrainer

from omnienv.dialects.trl import dataset, environment_factory
from omnienv.envs.wordle.env import PROMPT

OPENERS = ["crane", "slate", "audio", "raise", "stone", "light", "pious", "mount"]


def build_wordle_model(directory: Path, tools: list[Any], sft_steps: int) -> None:
    """The tiny model of ``tiny_model.py``, taught to call ``guess`` with a few opening words."""
    from transformers.utils import get_json_schema
    from trl.chat_template_utils import qwen3_chat_template

    corpus = [PROMPT, qwen3_chat_template, *(json.dumps(get_json_schema(t)) for t in tools)]
    corpus += [call_text("guess", {"word": w}) for w in OPENERS] + ["guesses left. Correct! Out of guesses. 🟩🟨⬛"]
    examples = [turn(messages, tools, completion) for messages, completion in _sft_conversations()]
    build_tiny_model(directory, examples, corpus, sft_steps)


def _sft_conversations() -> list[tuple[list[dict[str, Any]], str]]:
    """First guesses, and second guesses after a tool reply, with a few opening words."""
    out = []
    for first, second in zip(OPENERS, OPENERS[1:] + OPENERS[:1], strict=True):
        user = [{"role": "user", "content": PROMPT}]
        out.append((user, call_text("guess", {"word": first})))
        reply = {"role": "tool", "name": "guess", "content": f"{first.upper()} ⬛🟨⬛⬛🟩 — 5 guesses left."}
        out.append(([*user, called("guess", {"word": first}), reply], call_text("guess", {"word": second})))
    return out


class PrintLogs(TrainerCallback):
    """One ``LOG {json}`` line per logging step: the rewards and tool metrics TRL computed."""

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        print("LOG " + json.dumps({"step": state.global_step, **(logs or {})}), flush=True)


def printing(factory: Any, totals: dict[str, int]) -> Any:
    """``factory``'s class, printing each finished episode: what the environment answered, the reward.

    ``_call`` is where every tool call passes; as a private name, TRL does not offer it as a tool.
    """

    class Printing(factory):  # type: ignore[valid-type,misc]
        def reset(self, **row: Any) -> Any:
            self._task_id, self._replies = row.get("task_id"), []
            return super().reset(**row)

        def _call(self, name: str, arguments: dict[str, Any]) -> Any:
            reply = super()._call(name, arguments)
            self._replies.append(f"{name}({json.dumps(arguments)}) -> {str(reply)[:60]}")
            return reply

        def get_reward(self) -> float | None:
            reward = super().get_reward()
            episode = {
                "env": type(self).__name__,
                "task": self._task_id,
                "tool_calls": len(self._replies),
                "reward": reward,
                "failure": self.failure.message if self.failure else None,
                "calls": self._replies,
            }
            print("EPISODE " + json.dumps(episode, ensure_ascii=False), flush=True)
            totals["episodes"] += 1
            totals["tool_calls"] += len(self._replies)
            return reward

    Printing.__name__ = Printing.__qualname__ = factory.__name__  # TRL logs rewards/<class name>
    return Printing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B", help="a chat model that calls tools")
    parser.add_argument("--tiny", action="store_true", help="a tiny local model on the CPU; nothing downloaded")
    parser.add_argument("--steps", type=int, default=200, help="GRPO optimizer steps")
    parser.add_argument("--env", default="wordle", help="environment name or omnienv server URL")
    parser.add_argument("--output-dir", type=Path, default=Path("runs/wordle-grpo"))
    parser.add_argument("--tiny-dir", type=Path, default=None, help="where the tiny model is built or reused")
    parser.add_argument("--sft-steps", type=int, default=400)
    parser.add_argument("--tasks", type=int, default=64, help="training tasks taken from the train split")
    parser.add_argument("--max-tool-calls", type=int, default=None, help="tool-calling iterations per rollout")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--also", default=None, help="a second Wordle (name or server URL) trained on in the same run")
    parser.add_argument("--vllm", choices=["colocate", "server"], default=None, help="generate with vLLM (GPU)")
    parser.add_argument(
        "--vllm-server-url", default="http://127.0.0.1:8001", help="`trl vllm-serve`, for --vllm server"
    )
    parser.add_argument("--vllm-gpu-memory", type=float, default=0.3, help="vLLM's share of the GPU, colocated")
    parser.add_argument(
        "--async-grpo", action="store_true", help="TRL's AsyncGRPOTrainer, on a `vllm serve` at --vllm-server-url"
    )
    args = parser.parse_args()
    if args.async_grpo and (args.tiny or args.vllm):
        parser.error("--async-grpo generates on a `vllm serve` at --vllm-server-url: no --tiny, no --vllm")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental
    set_seed(args.seed)

    totals = {"episodes": 0, "tool_calls": 0}
    # The asynchronous trainer pickles its factories into a process of its own: they go as they are,
    # since the printing subclass (local, and counting into this process's totals) could not follow.
    wrap = (lambda factory, totals: factory) if args.async_grpo else printing
    Wordle = wrap(environment_factory(args.env, name="Wordle"), totals)
    factories: Any = Wordle
    train_dataset = dataset(args.env, "train", limit=args.tasks)
    if args.also:  # two environments, one run: rows alternate between them, in order
        from datasets import interleave_datasets

        factories = {"first": Wordle, "second": wrap(environment_factory(args.also, name="WordleAlso"), totals)}
        first = dataset(args.env, "train", limit=args.tasks, environment="first")
        second = dataset(args.also, "train", limit=args.tasks, environment="second")
        train_dataset = interleave_datasets([first, second])

    if args.async_grpo:
        train_async(args, factories, train_dataset)
        return
    if args.tiny:
        torch.set_num_threads(1)  # a tiny model gains nothing from threads, and loses a lot on a busy CPU
        model_dir = args.tiny_dir or args.output_dir / "tiny-model"
        if not (model_dir / "config.json").exists():
            started = time.perf_counter()
            tools = [getattr(Wordle, n) for n in ("guess", "get_history")]
            build_wordle_model(model_dir, tools, args.sft_steps)
            print(f"built the tiny model in {time.perf_counter() - started:.1f} s: {model_dir}", flush=True)
        model: Any = Qwen3ForCausalLM.from_pretrained(model_dir)
        tokenizer: Any = PreTrainedTokenizerFast.from_pretrained(model_dir)
        config = GRPOConfig(
            output_dir=str(args.output_dir),
            use_cpu=True,
            max_steps=args.steps,
            per_device_train_batch_size=8 if args.also else 4,  # mixed: one prompt of each environment
            num_generations=4,
            max_completion_length=96,
            max_tool_calling_iterations=args.max_tool_calls or 2,
            beta=0.0,
            learning_rate=1e-3,
            logging_steps=1,
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            seed=args.seed,
            temperature=1.0,
            shuffle_dataset=not args.also,  # mixed: each step's two prompts come from both environments
        )
    else:
        model, tokenizer = args.model, None
        config = GRPOConfig(
            output_dir=str(args.output_dir),
            use_cpu=not torch.cuda.is_available(),
            max_steps=args.steps,
            per_device_train_batch_size=8,
            num_generations=8,
            max_completion_length=1024,
            max_tool_calling_iterations=args.max_tool_calls or 8,
            logging_steps=1,
            report_to="none",
            save_strategy="no",
            seed=args.seed,
            chat_template_kwargs={"enable_thinking": False},
            use_vllm=args.vllm is not None,
            vllm_mode=args.vllm or "colocate",
            vllm_server_base_url=args.vllm_server_url if args.vllm == "server" else None,
            vllm_gpu_memory_utilization=args.vllm_gpu_memory,
            bf16=torch.cuda.is_available(),
        )

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        environment_factory=factories,
        train_dataset=train_dataset,
        callbacks=[PrintLogs()],
    )
    print("TOOLS " + json.dumps(sorted(t.__name__ for t in trainer.tools)), flush=True)
    print("REWARD_FUNCS " + json.dumps(trainer.reward_func_names), flush=True)
    trainer.train()
    print(
        f"DONE steps={trainer.state.global_step} episodes={totals['episodes']} env_tool_calls={totals['tool_calls']}",
        flush=True,
    )


def train_async(args: argparse.Namespace, factories: Any, train_dataset: Any) -> None:
    """``AsyncGRPOTrainer`` on the same factories and rows; the trainer itself waits for the server."""
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    config = AsyncGRPOConfig(
        output_dir=str(args.output_dir),
        max_steps=args.steps,
        per_device_train_batch_size=8,
        num_generations=8,
        max_completion_length=1024,
        max_tool_calling_iterations=args.max_tool_calls or 8,
        max_inflight_tasks=32,  # each holds a server session while it runs: size --max-sessions for it
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=args.seed,
        chat_template_kwargs={"enable_thinking": False},
        vllm_server_base_url=args.vllm_server_url,
    )
    trainer = AsyncGRPOTrainer(
        model=args.model,
        args=config,
        environment_factory=factories,
        train_dataset=train_dataset,
        callbacks=[PrintLogs()],
    )
    trainer.train()
    print(f"DONE steps={trainer.state.global_step}", flush=True)


if __name__ == "__main__":
    main()
