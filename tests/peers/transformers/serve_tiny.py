"""Build a tiny chat model into a folder (argv[1]), then serve it with ``transformers serve`` on 127.0.0.1.

Run in the ``transformers`` peer virtualenv, nothing downloaded: a word-level tokenizer (each word of
``WORDS`` one token, the rest ``<unk>``) with a ChatML template, and a random Qwen3-shaped model (seed
0), saved with ``save_pretrained``; what it says is noise, which is all a test of the wire needs. The
folder is then served by the ``serve`` command's own class (what ``transformers serve FOLDER --host
127.0.0.1 --port 0 --device cpu`` runs), in this process so that torch is imported once; uvicorn logs
the address once it listens (``Uvicorn running on http://127.0.0.1:PORT``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"]
WORDS = [*SPECIAL, "user", "assistant", "system", "\n", *(f"w{n}" for n in range(60))]
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def main(folder: Path) -> None:
    backend = Tokenizer(models.WordLevel({word: n for n, word in enumerate(WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<unk>",
        additional_special_tokens=SPECIAL[1:3],
        chat_template=TEMPLATE,
    )
    config = Qwen3Config(
        vocab_size=len(WORDS),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    from transformers.cli.serve import Serve

    Serve(sys.argv[1], host="127.0.0.1", port=0, device="cpu")
