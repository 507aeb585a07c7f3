"""TRL's own AsyncRolloutWorker plays a served Wordle through ``environment_factory(url)``; prints JSON lines.

Runs in TRL's virtualenv: ``check_async_worker.py WORDLE_URL MODEL_DIR``. The worker is the real one
that ``AsyncGRPOTrainer`` starts: it pickles its ``environment_factory`` into a spawned child, which
renders prompts, asks vLLM's ``/v1/completions`` for token ids and logprobs, calls the environment's
tools and scores each rollout with ``get_reward``. vLLM needs a GPU, so :class:`StandIn` answers that
one route (plus ``/health`` and ``/v1/models``) on 127.0.0.1, sampling from the tiny model of
``examples/train_wordle_grpo.py`` with transformers. Only the worker's import gate for vLLM is
lifted; nothing of vLLM's runs in the worker, which speaks HTTP only.
"""

from __future__ import annotations

import json
import os
import queue
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import torch
from accelerate.state import PartialState

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

from train_wordle_grpo import build_wordle_model
from transformers import PreTrainedTokenizerFast, Qwen3ForCausalLM
from trl.experimental.async_grpo import async_rollout_worker

from omnienv.dialects.trl import dataset, environment_factory

ROLLOUTS = 4  # training rows: two groups of two generations, at least
DEADLINE_S = 300.0


class StandIn(ThreadingHTTPServer):
    """The part of vLLM's OpenAI-compatible server the rollout worker calls, generating with ``model``."""

    def __init__(self, model: Any, tokenizer: Any, eos: list[int]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model, self.tokenizer, self.eos = model, tokenizer, set(eos)
        self.lock = threading.Lock()  # one generation at a time: a tiny model on one thread
        self.requests = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Sample like vLLM: token ids and each sampled token's logprob; stop at EOS, which is kept."""
        generator = torch.Generator().manual_seed(int(body.get("seed", 0)) % (1 << 63))
        temperature = max(float(body.get("temperature", 1.0)), 1e-5)
        tokens: list[int] = []
        logprobs: list[float] = []
        with self.lock, torch.no_grad():
            self.requests += 1
            out = self.model(input_ids=torch.tensor([body["prompt"]]), use_cache=True)
            for _ in range(int(body["max_tokens"])):
                logp = torch.log_softmax(out.logits[0, -1].float() / temperature, dim=-1)
                token = int(torch.multinomial(logp.exp(), 1, generator=generator))
                tokens.append(token)
                logprobs.append(float(logp[token]))
                if token in self.eos:
                    break
                out = self.model(input_ids=torch.tensor([[token]]), cache=out.cache, use_cache=True)
        finish = "stop" if tokens and tokens[-1] in self.eos else "length"
        text = self.tokenizer.decode(tokens)
        choice = {"index": 0, "text": text, "token_ids": tokens, "finish_reason": finish}
        choice["logprobs"] = {"token_logprobs": logprobs, "tokens": [self.tokenizer.decode([t]) for t in tokens]}
        return {"id": f"cmpl-{self.requests}", "object": "text_completion", "model": body["model"], "choices": [choice]}


class _Handler(BaseHTTPRequestHandler):
    server: StandIn

    def do_GET(self) -> None:
        if self.path == "/health":
            self._reply(200, {})
        elif self.path == "/v1/models":
            self._reply(200, {"object": "list", "data": [{"id": "tiny", "object": "model"}]})
        else:
            self._reply(404, {"error": self.path})

    def do_POST(self) -> None:
        if self.path != "/v1/completions":
            self._reply(404, {"error": self.path})
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._reply(200, self.server.complete(body))

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # stdout is the JSON report


def main() -> None:
    url, model_dir = sys.argv[1], Path(sys.argv[2])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    random.seed(0)  # the worker draws each request's sampling seed from it: the same samples run to run
    PartialState()  # the worker logs through accelerate, as inside the trainer
    Wordle = environment_factory(url, name="Wordle")
    if not (model_dir / "config.json").exists():
        started = time.perf_counter()
        build_wordle_model(model_dir, [Wordle.guess, Wordle.get_history], 400)  # type: ignore[attr-defined]
        print(json.dumps({"kind": "built", "seconds": round(time.perf_counter() - started, 1)}), flush=True)
    model = Qwen3ForCausalLM.from_pretrained(model_dir).eval()
    tokenizer = PreTrainedTokenizerFast.from_pretrained(model_dir)
    eos = sorted({tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")})

    standin = StandIn(model, tokenizer, eos)
    serving = threading.Thread(target=standin.serve_forever, daemon=True)
    serving.start()
    # The worker refuses to start where vLLM is not installed; it only ever reaches vLLM over HTTP.
    async_rollout_worker.is_vllm_available = lambda: True
    worker = async_rollout_worker.AsyncRolloutWorker(
        model_name="tiny",
        dataset=dataset(url, "train", limit=4),
        reward_funcs=[],  # the environment's get_reward is the only reward
        processing_class=tokenizer,
        eos_token_ids=eos,
        environment_factory=Wordle,
        num_generations=2,
        max_inflight_tasks=2,
        vllm_server_url=standin.url,
        max_tokens=48,
        temperature=0.5,  # the tiny model's guesses at 1.0 are often no word at all, and none may be scored
        request_timeout=60,
        max_tool_calling_iterations=2,
        child_ready_timeout=240,
    )
    samples: list[Any] = []
    try:
        worker.start()
        deadline = time.monotonic() + DEADLINE_S
        while len(samples) < ROLLOUTS:
            worker.check_health(stale_after_s=120)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(samples)} samples within {DEADLINE_S:g} s")
            try:
                samples.append(worker.rollout_buffer.get(timeout=1.0))
            except queue.Empty:
                continue
    finally:
        worker.stop()
        standin.shutdown()
        standin.server_close()
    for sample in samples:
        line = {
            "kind": "sample",
            "group": sample.group_id,
            "metrics": sample.metrics,
            "prompt": sample.prompt[-1]["content"][:60],
            "completion": [{"role": m["role"], "content": str(m.get("content"))} for m in sample.completion],
            "tool_calls": [c["function"]["name"] for m in sample.completion for c in m.get("tool_calls") or []],
            "tokens": len(sample.input_ids),
            "trained": int(sample.completion_mask.sum()),
        }
        print(json.dumps(line, ensure_ascii=False), flush=True)
    print(json.dumps({"kind": "standin", "requests": standin.requests, "pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    main()
