"""Run in TRL's virtualenv: each matrix cell through one real ``GRPOTrainer.train()`` step.

The trainer is TRL's own, built on the cell's ``environment_factory`` class and its prompt
``dataset``: TRL probes the class for tools, pools its instances, calls ``reset(**row)``, parses
the model's tool calls, runs them on the instances in its tool loop, scores every rollout with
``get_reward`` and takes an optimizer step on a tiny random Qwen3-VL built here (a VLM, so the
desktop's screenshots travel as images). One method is replaced: generation
(``_generate_single_turn``), whose tokens are the cell's scripted player, fed what it decodes from
the token ids TRL would have the model read. Each step has one prompt and two rollouts: the first
plays the episode, the second makes the crash call and then stops. Prints one report per cell.
"""

# ruff: noqa: E402
from __future__ import annotations

import sys

# this file's folder comes first on the path, and its name is the framework's own: take it off
sys.path[:] = [p for p in sys.path if p != __file__.rsplit("/", 1)[0]]

import contextlib
import io
import json
import os
import re
import tempfile
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen3_vl_chat_template

from omnienv.core import ToolCall
from omnienv.dialects.trl import dataset, environment_factory
from tests.matrix.cells import (
    CELLS,
    CRASH,
    MAX_CALLS,
    Cell,
    Player,
    cell_report,
    crash_report,
    image_report,
    print_report,
)

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"]
MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
_USER = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.S)
_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.S)
_VISION = re.compile(r"<\|vision_start\|>(?:<\|image_pad\|>)*<\|vision_end\|>")
_OVER = ("The episode is over", "The environment failed")


class ImageProcessorOnly(Qwen3VLProcessor):
    """Qwen3-VL's processor for images alone: its video processor needs torchvision, which TRL does not."""

    def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
        if argument_name == "video_processor" and argument is None:
            return None
        return super().check_argument_for_proper_class(argument_name, argument)


def tiny_vlm() -> tuple[Qwen3VLForConditionalGeneration, ImageProcessorOnly]:
    """A byte-level tokenizer and a random Qwen3-VL of about 100k parameters, in memory: nothing is downloaded."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator([qwen3_vl_chat_template] * 2, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=qwen3_vl_chat_template,
    )
    tokenizer.add_tokens(MARKERS)
    images = Qwen2VLImageProcessorPil(  # a screenshot becomes a few dozen image tokens
        patch_size=16, merge_size=2, temporal_patch_size=2, min_pixels=32 * 32 * 4, max_pixels=32 * 32 * 48
    )
    processor = ImageProcessorOnly(image_processor=images, tokenizer=tokenizer, chat_template=qwen3_vl_chat_template)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL}
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 32768,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]},
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": None,
    }
    vision = {
        "depth": 1,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "out_hidden_size": 64,
        "num_position_embeddings": 256,
        "deepstack_visual_indexes": [0],
    }
    config = Qwen3VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    model = Qwen3VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, processor


class ScriptedGRPO(GRPOTrainer):
    """TRL's GRPOTrainer with the cell's scripted player in place of sampling from the model.

    Everything else (tool parsing, the tool loop, rewards, the loss and the optimizer step) is
    TRL's. The player reads the token ids TRL built for the model, decoded: the user's prompt and
    every ``<tool_response>``, whose images are image tokens (counted), not text.
    """

    def __init__(self, *args: Any, cell: Cell, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cell = cell
        self.prompts: list[str] = []
        self.responses: list[str] = []
        self.images_seen = 0
        self.tool_images: list[list[Any]] = []
        self.rewards: list[list[float]] = []

    def _generate_single_turn(
        self, prompt_ids: Any, images: Any, multimodal_fields: Any, num_generations: int, has_tool_images: bool = False
    ) -> tuple[list[list[int]], None]:
        return [self._scripted(list(ids), index) for index, ids in enumerate(prompt_ids)], None

    def _scripted(self, ids: list[int], index: int) -> list[int]:
        text = self._tokenizer.decode(ids, skip_special_tokens=False)
        prompt = _USER.search(text)
        responses = _RESPONSE.findall(text)
        if not responses:  # the first turn: rollout 0 plays the episode, rollout 1 crashes it
            self.prompts.append(_VISION.sub("", text))  # system prompt with the tool schemas, and the user's
            call: ToolCall | None = self.cell.crash if index % 2 else None
        else:
            call = None
        if call is None and not (CRASH in text or any(r.startswith(_OVER) for r in responses[-1:])):
            player = Player(self.cell, prompt.group(1) if prompt else "")
            for response in responses:
                player.saw(player.act(), _VISION.sub("", response))
            call = player.act()
        if responses and index == 0:
            self.responses = [_VISION.sub("", response) for response in responses]
            self.images_seen = max(self.images_seen, len(_VISION.findall(text)))
        reply = "The episode is over." if call is None else _tool_call(call)
        return list(self._tokenizer(reply + "<|im_end|>", add_special_tokens=False)["input_ids"])

    def _tool_call_loop(self, *args: Any, **kwargs: Any) -> Any:
        result = super()._tool_call_loop(*args, **kwargs)
        self.tool_images = result[-1]  # the images TRL collected from the tools' answers, per rollout
        return result

    def _calculate_rewards(self, *args: Any, **kwargs: Any) -> Any:
        rewards = super()._calculate_rewards(*args, **kwargs)
        self.rewards = rewards.tolist()
        return rewards


def _tool_call(call: ToolCall) -> str:
    return "<tool_call>\n" + json.dumps({"name": call.name, "arguments": call.arguments}) + "\n</tool_call>"


def _png(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def play(env: str, output_dir: str) -> dict[str, Any]:
    cell = CELLS[env]
    factory = environment_factory(cell.spec)
    rows = dataset(cell.spec, cell.task_id.split("/", 1)[0]).filter(lambda row: row["task_id"] == cell.task_id)
    rows = rows.add_column("seed", [0] * len(rows))
    model, processor = tiny_vlm()
    config = GRPOConfig(
        output_dir=output_dir,
        use_cpu=True,
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8192,
        max_tool_calling_iterations=MAX_CALLS + 2,
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        shuffle_dataset=False,
    )
    trainer = ScriptedGRPO(
        model=model,
        processing_class=processor,
        args=config,
        environment_factory=factory,
        train_dataset=rows,
        cell=cell,
    )
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the trainer prints its logs; stdout carries the reports
            trainer.train()
        played, crashed = trainer.environments
        [[total], [crash_reward]] = trainer.rewards
        ledger = played._ledger
        images = [image_report("PIL image in the tool message", _png(image)) for image in trainer.tool_images[0]]
        seen: list[Any] = [rows.to_list(), *trainer.prompts]
        notes = (
            f"TRL steps={trainer.state.global_step}; rewards/{type(played).__name__}={trainer.rewards}; "
            f"images (as image tokens) in the model's last prompt={trainer.images_seen}; "
            f"the played episode's failure={played.failure}"
        )
        return cell_report(
            env,
            rewards=None,
            total=total,
            done=ledger is not None and ledger.done and played.failure is None,
            crash=crash_report(
                crash_reward,
                "get_reward() is None (NaN in TRL)",
                crashed.get_reward() is None and crashed.failure is not None,
            ),
            seen=seen,
            texts=trainer.responses,
            images=images,
            notes=notes,
        )
    finally:
        for pool in trainer._environment_pool.values():
            for environment in pool:
                environment._close()


def main() -> int:
    torch.set_num_threads(1)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    with tempfile.TemporaryDirectory() as output_dir:
        for env in CELLS:
            print_report(play(env, output_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
