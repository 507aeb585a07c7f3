"""Feed omnienv's exported rollouts to TRL's own GRPOTrainer, in TRL's virtualenv, and report what it trained on.

A ``rollout_func`` returns :func:`omnienv.capture.exporters.to_trl_rollout` of captured records
(multi-turn, prefix-stitched, one of them failed); TRL runs one real GRPO step on a tiny random
model on the CPU. The trainer class is TRL's, subclassed only to print what its
``_generate_and_score_completions`` produced from our dict (the ids, masks, sampling log-probs and
advantages it trains on). Output: JSON lines with a ``kind``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
from trl import GRPOConfig, GRPOTrainer

from omnienv.capture.calls import ModelCall
from omnienv.capture.exporters import to_trl_rollout
from omnienv.capture.records import TrainingRecord
from omnienv.core import Failure

PAD, EOS = 0, 1
WORDS = ["<pad>", "<eos>", "<unk>", *(f"t{n}" for n in range(29))]


REPORT = sys.stdout  # TRL prints its logs as Python dicts; they go to stderr, so stdout is only these lines


def emit(kind: str, **data: Any) -> None:
    print(json.dumps({"kind": kind, **data}), file=REPORT, flush=True)


def tiny(directory: Path) -> tuple[Any, Any]:
    """A word-level tokenizer over ``WORDS`` and a random two-layer Qwen3 sized to it; nothing downloaded."""
    vocab = {word: n for n, word in enumerate(WORDS)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<eos>", pad_token="<pad>", unk_token="<unk>", padding_side="left"
    )
    config = Qwen3Config(
        vocab_size=len(WORDS),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        pad_token_id=PAD,
        eos_token_id=EOS,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = EOS
    model.generation_config.pad_token_id = PAD
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return Qwen3ForCausalLM.from_pretrained(directory), PreTrainedTokenizerFast.from_pretrained(directory)


def call(index: int, prompt: list[int], completion: list[int], session: str, scored: bool = True) -> ModelCall:
    logprobs = [-0.25 - 0.125 * n for n in range(len(completion))] if scored else None
    return ModelCall(
        episode=session,
        api="chat",
        request={"messages": []},
        response={},
        prompt_token_ids=prompt,
        completion_token_ids=completion,
        logprobs=logprobs,
        finish_reason="stop",
        missing=None if scored else "the upstream returned no logprobs",
        index=index,
    )


def record(n: int, reward: float | None, failure: Failure | None = None, scored: bool = True) -> TrainingRecord:
    """Two turns: the second call's prompt extends the first call's prompt and completion exactly.
    ``scored`` False: the second call came back without log-probabilities."""
    session = f"sess-{n}"
    first_prompt = [3 + n, 4, 5]
    first_completion = [6 + n, 7, EOS]
    turn = [8] + [9 + n] * (1 + n % 2)  # the tool result the harness added; lengths differ, so TRL pads
    second = call(1, first_prompt + first_completion + turn, [10 + n, 11, EOS], session, scored)
    calls = [call(0, first_prompt, first_completion, session), second]
    return TrainingRecord.from_calls(calls, reward=reward, failure=failure)


RECORDS = [
    record(0, 1.0),
    record(1, 0.0),
    record(2, 0.5, scored=False),
    record(3, None, Failure("session_lost", "the sandbox died")),
]


def main() -> None:
    torch.set_num_threads(1)
    handed: list[dict[str, Any]] = []

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        rows = to_trl_rollout(RECORDS[: len(prompts)])
        handed.append(rows)
        emit("rollout", prompts=list(prompts), keys=sorted(rows))
        return rows

    def env_reward(completions: list[Any], reward: list[float | None], **kwargs: Any) -> list[float | None]:
        emit(
            "reward_kwargs",
            reward=reward,
            failure=kwargs.get("failure"),
            session_id=kwargs.get("session_id"),
            completion_ids=[list(ids) for ids in kwargs.get("completion_ids", [])],
        )
        return reward

    class Observed(GRPOTrainer):
        """TRL's trainer; prints what it built from the rollout before training on it."""

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            out = super()._generate_and_score_completions(inputs)
            rows = []
            for i in range(out["completion_ids"].size(0)):
                keep = out["completion_mask"][i].bool()
                sampled = out.get("sampling_per_token_logps")
                logps = [] if sampled is None else sampled[i][keep].tolist()
                rows.append(
                    {
                        "prompt_ids": out["prompt_ids"][i][out["prompt_mask"][i].bool()].tolist(),
                        "completion_ids": out["completion_ids"][i][keep].tolist(),
                        "tool_mask": out["tool_mask"][i][keep].tolist() if "tool_mask" in out else None,
                        "sampling_logps": [None if math.isnan(lp) else lp for lp in logps],
                        "advantage": float(out["advantages"][i]),
                    }
                )
            emit("batch", rows=rows, num_items_in_batch=int(out["num_items_in_batch"]))
            return out

    with tempfile.TemporaryDirectory() as scratch, contextlib.redirect_stdout(sys.stderr):
        model, tokenizer = tiny(Path(scratch) / "tiny")
        config = GRPOConfig(
            output_dir=str(Path(scratch) / "run"),
            use_cpu=True,
            max_steps=1,
            per_device_train_batch_size=4,
            num_generations=2,
            max_completion_length=16,
            beta=0.0,
            learning_rate=1e-3,
            logging_steps=1,
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            shuffle_dataset=False,
            seed=0,
        )
        trainer = Observed(
            model=model,
            reward_funcs=[env_reward],
            args=config,
            train_dataset=Dataset.from_dict({"prompt": ["t0 t1", "t2 t3"]}),
            processing_class=tokenizer,
            rollout_func=rollout_func,
        )
        before = [p.detach().clone() for p in trainer.model.parameters()]
        trainer.train()
        moved = any(not torch.equal(a, b.detach()) for a, b in zip(before, trainer.model.parameters(), strict=True))
        logs = [entry for entry in trainer.state.log_history if "loss" in entry]
        emit("trained", steps=trainer.state.global_step, moved=moved, logs=logs)
        emit("exported", rows=handed[0] if handed else None)


if __name__ == "__main__":
    main()
