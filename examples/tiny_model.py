"""A tiny chat model that calls tools, built on the spot: nothing is downloaded, no GPU is needed.

Shared by the training examples (``train_wordle_grpo.py --tiny``, ``train_demo.py``); not a script.
It makes a byte-level BPE tokenizer trained on the texts the model will see, gives it TRL's Qwen3
chat template (so TRL parses the model's ``<tool_call>`` blocks like a real Qwen3's), builds a
random Qwen3-shaped model of about 100k parameters, and teaches it the tool-call *format* with a
few hundred supervised steps. What the calls should say is left to reinforcement learning.

A supervised example is a list of segments ``(text, trained)``, each tokenized on its own and
joined, the way TRL joins a rollout's tokens: the rendered prompt, the model's turn, the tool's
reply (:func:`tool_reply`), the next turn... Only ``trained`` segments (the model's) carry a loss.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]

Example = list[tuple[str, bool]]
"""Segments of one supervised sequence: ``(text, trained)``."""


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """An assistant turn that calls one tool, as Qwen3's chat template renders it."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call><|im_end|>'


def called(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The same call as a message in the history."""
    call = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def render(messages: list[dict[str, Any]], tools: Sequence[Any]) -> str:
    """The prompt text the model continues: the conversation so far and the assistant's header."""
    return _renderer().apply_chat_template(messages, tools=list(tools), add_generation_prompt=True, tokenize=False)


def tool_reply(name: str, content: str) -> str:
    """What follows the model's ``<|im_end|>`` when tool ``name`` answers ``content``: the tool's
    turn and the next assistant header, as TRL appends them to a rollout."""
    history = [{"role": "user", "content": ""}, called(name, {})]
    text = render([*history, {"role": "tool", "name": name, "content": content}], ())
    end = text.index("<|im_end|>", text.index("</tool_call>")) + len("<|im_end|>")
    return text[end:]


def turn(messages: list[dict[str, Any]], tools: Sequence[Any], completion: str) -> Example:
    """One supervised turn: the rendered conversation, then the model's ``completion``."""
    return [(render(messages, tools), False), (completion, True)]


def build_tiny_model(
    directory: Path,
    examples: Sequence[Example],
    corpus: Sequence[str],
    sft_steps: int,
    *,
    vocab_size: int = 600,
    whole_phrases: bool = False,
    learning_rate: float = 3e-3,
    **config: Any,
) -> None:
    """Build, teach the format to, and save (to ``directory``) a tokenizer and a tiny Qwen3.

    Args:
        directory: Where ``from_pretrained`` will find both afterwards.
        examples: The supervised sequences; cycled through for ``sft_steps`` steps.
        corpus: Texts the tokenizer is trained on (with ``whole_phrases``, besides the examples).
        sft_steps: Supervised steps, one example each.
        vocab_size: The tokenizer's vocabulary, special tokens included.
        whole_phrases: Let BPE merge across spaces, punctuation and the ``<tool_call>`` markers,
            so a text the model sees often (a whole tool call) becomes one or two tokens and
            each choice the model makes is one token.
        learning_rate: AdamW's, for the supervised steps.
        config: ``Qwen3Config`` settings that replace the defaults below.
    """
    texts = list(corpus) + [text for example in examples for text, _ in example] * whole_phrases
    tokenizer = _tokenizer(texts, vocab_size, whole_phrases)
    settings = Qwen3Config(
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
    for key, value in config.items():
        setattr(settings, key, value)
    model = Qwen3ForCausalLM(settings)
    sequences = []
    for example in examples:
        ids: list[int] = []
        labels: list[int] = []
        for text, trained in example:
            part = tokenizer(text, add_special_tokens=False)["input_ids"]
            ids += part
            labels += part if trained else [-100] * len(part)
        sequences.append((torch.tensor([ids]), torch.tensor([labels])))
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    # decayed to 0, so the last steps settle the format instead of jumping between examples
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / sft_steps)
    model.train()
    for step in range(sft_steps):
        input_ids, target = sequences[step % len(sequences)]
        loss = model(input_ids=input_ids, labels=target).loss
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 100 == 0 or step == sft_steps - 1:
            print(f"SFT step {step} loss {loss.item():.3f}", flush=True)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)


def _tokenizer(texts: Sequence[str], size: int, whole: bool) -> PreTrainedTokenizerFast:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from trl.chat_template_utils import qwen3_chat_template

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=not whole)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=size, special_tokens=QWEN_SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(list(texts) * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=qwen3_chat_template,
    )
    if not whole:
        tokenizer.add_tokens(QWEN_MARKERS)  # plain added tokens, as in Qwen's own tokenizer
    return tokenizer


@cache
def _renderer() -> PreTrainedTokenizerFast:
    """Qwen3's chat template on an empty vocabulary: renders text, never tokenizes."""
    from tokenizers import Tokenizer, models
    from trl.chat_template_utils import qwen3_chat_template

    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), chat_template=qwen3_chat_template)
