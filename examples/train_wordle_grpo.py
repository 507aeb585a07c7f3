"""Train a model to play Wordle with TRL's GRPOTrainer, the environment being omnienv's Wordle.

With a GPU and a chat model that calls tools (Qwen3, Llama 3.1...)::

    python examples/train_wordle_grpo.py --model Qwen/Qwen3-0.6B --steps 200

On any laptop, with nothing downloaded: ``--tiny`` builds a tokenizer and a random 100k-parameter
Qwen3-shaped model on the spot, teaches it the tool-call format with a few supervised steps, then
runs GRPO on the CPU::

    python examples/train_wordle_grpo.py --tiny --steps 2

``--env http://127.0.0.1:8000`` trains against a Wordle served by ``omnienv serve wordle`` instead
of one in this process; ``--also http://127.0.0.1:8000`` trains on both at once (TRL's dict
``environment_factory``: each row names its environment, each environment owns its rewards).
Needs ``pip install 'omnienv[trl]'`` (and ``torch``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import torch
from transformers import (
    PreTrainedTokenizerFast,
    Qwen3Config,
    Qwen3ForCausalLM,
    TrainerCallback,
    set_seed,
)
from trl import GRPOConfig, GRPOTrainer

from omnienv.dialects.trl import dataset, environment_factory
from omnienv.envs.wordle.env import PROMPT

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
OPENERS = ["crane", "slate", "audio", "raise", "stone", "light", "pious", "mount"]


def call_text(word: str) -> str:
    return f'<tool_call>\n{{"name": "guess", "arguments": {{"word": "{word}"}}}}\n</tool_call><|im_end|>'


def build_tiny_model(directory: Path, tools: list[Any], sft_steps: int) -> None:
    """A byte-level BPE tokenizer and a tiny random Qwen3, taught to call ``guess`` by a few SFT steps."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from trl.chat_template_utils import qwen3_chat_template

    conversations = _sft_conversations()
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    corpus = [PROMPT, qwen3_chat_template, *(json.dumps(t) for t in _schemas(tools))]
    corpus += [call_text(w) for w in OPENERS] + ["guesses left. Correct! Out of guesses. 🟩🟨⬛"]
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=QWEN_SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(corpus * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=qwen3_chat_template,
    )
    tokenizer.add_tokens(QWEN_MARKERS)  # plain added tokens, as in Qwen's own tokenizer

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    model = Qwen3ForCausalLM(config)
    examples = []
    for messages, completion in conversations:
        prefix = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
        prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
        target_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([prefix_ids + target_ids])
        labels = torch.tensor([[-100] * len(prefix_ids) + target_ids])
        examples.append((ids, labels))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(sft_steps):
        ids, labels = examples[step % len(examples)]
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 25 == 0 or step == sft_steps - 1:
            print(f"SFT step {step} loss {loss.item():.3f}", flush=True)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)


def _sft_conversations() -> list[tuple[list[dict[str, Any]], str]]:
    """First guesses, and second guesses after a tool reply, with a few opening words."""
    out = []
    for first, second in zip(OPENERS, OPENERS[1:] + OPENERS[:1], strict=True):
        user = [{"role": "user", "content": PROMPT}]
        out.append((user, call_text(first)))
        called = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "guess", "arguments": {"word": first}}}],
        }
        reply = {"role": "tool", "name": "guess", "content": f"{first.upper()} ⬛🟨⬛⬛🟩 — 5 guesses left."}
        out.append(([*user, called, reply], call_text(second)))
    return out


def _schemas(tools: list[Any]) -> list[dict[str, Any]]:
    from transformers.utils import get_json_schema

    return [get_json_schema(t) for t in tools]


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
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental
    set_seed(args.seed)

    totals = {"episodes": 0, "tool_calls": 0}
    Wordle = printing(environment_factory(args.env, name="Wordle"), totals)
    factories: Any = Wordle
    train_dataset = dataset(args.env, "train", limit=args.tasks)
    if args.also:  # two environments, one run: rows alternate between them, in order
        from datasets import interleave_datasets

        factories = {"first": Wordle, "second": printing(environment_factory(args.also, name="WordleAlso"), totals)}
        first = dataset(args.env, "train", limit=args.tasks, environment="first")
        second = dataset(args.also, "train", limit=args.tasks, environment="second")
        train_dataset = interleave_datasets([first, second])

    if args.tiny:
        torch.set_num_threads(1)  # a tiny model gains nothing from threads, and loses a lot on a busy CPU
        model_dir = args.tiny_dir or args.output_dir / "tiny-model"
        if not (model_dir / "config.json").exists():
            started = time.perf_counter()
            tools = [getattr(Wordle, n) for n in ("guess", "get_history")]
            build_tiny_model(model_dir, tools, args.sft_steps)
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


if __name__ == "__main__":
    main()
