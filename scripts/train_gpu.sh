#!/usr/bin/env bash
# Train a real tool-calling model on Wordle with TRL's GRPOTrainer and vLLM, the game served by
# `omnienv serve` (docs/trl.md, "On a GPU"). Stops at once, saying what is missing, when there is no
# GPU, no vLLM or no local copy of the model's weights; the server it starts is stopped on any exit.
#
#   scripts/train_gpu.sh                          # Qwen/Qwen3-0.6B, vLLM colocated, 200 steps
#   MODEL=Qwen/Qwen3-1.7B STEPS=500 scripts/train_gpu.sh
#   VLLM=server scripts/train_gpu.sh              # needs `trl vllm-serve --model $MODEL --port 8001` on another GPU
#   ASYNC=1 scripts/train_gpu.sh                  # TRL's AsyncGRPOTrainer; needs, on another GPU, vLLM's own server:
#       VLLM_SERVER_DEV_MODE=1 vllm serve $MODEL --port 8001 --weight-transfer-config '{"backend":"nccl"}'
#
# PYTHON is an interpreter with omnienv[trl,server], torch for CUDA and vllm installed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python}
MODEL=${MODEL:-Qwen/Qwen3-0.6B}
STEPS=${STEPS:-200}
VLLM=${VLLM:-colocate}
ASYNC=${ASYNC:-0}
VLLM_URL=${VLLM_URL:-http://127.0.0.1:8001}  # the vLLM server of VLLM=server or ASYNC=1
PORT=${PORT:-8000}
# one server session per rollout in a generation batch, on every training process, and one spare
SESSIONS=${SESSIONS:-64}
OUT=${OUT:-runs/wordle-grpo-gpu}

fail() { echo "train_gpu.sh: $*" >&2; exit 1; }

"$PYTHON" -c "import torch" 2>/dev/null || fail "$PYTHON has no torch: install a CUDA build of torch first"
"$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null \
    || fail "no CUDA GPU visible to $PYTHON (torch.cuda.is_available() is False); the CPU demo is 'make train-demo'"
"$PYTHON" -c "import vllm" 2>/dev/null \
    || fail "vllm is not installed for $PYTHON: pip install vllm (a build matching your torch and CUDA)"
"$PYTHON" -c "import trl, omnienv.dialects.trl, omnienv.app" 2>/dev/null \
    || fail "$PYTHON lacks omnienv's TRL dialect or server: pip install -e '.[trl,server]'"
"$PYTHON" - "$MODEL" <<'EOF' || fail "no local copy of $MODEL: download it first (huggingface-cli download $MODEL) or set MODEL to a local directory"
import os, sys
from huggingface_hub import snapshot_download
model = sys.argv[1]
if not os.path.isdir(model):
    snapshot_download(model, local_files_only=True)
EOF

if [[ "$ASYNC" == 1 ]]; then
    "$PYTHON" -c "import trl.experimental.async_grpo, aiohttp" 2>/dev/null \
        || fail "$PYTHON cannot run TRL's AsyncGRPOTrainer: pip install aiohttp (and trl>=1.16)"
    "$PYTHON" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)" "$VLLM_URL/health" \
        2>/dev/null || fail "no vLLM server answers $VLLM_URL/health: ASYNC=1 generates there; on another GPU start
    VLLM_SERVER_DEV_MODE=1 vllm serve $MODEL --port ${VLLM_URL##*:} --weight-transfer-config '{\"backend\":\"nccl\"}'
or set VLLM_URL to yours"
fi

"$PYTHON" -m omnienv.cli.main serve wordle --host 127.0.0.1 --port "$PORT" \
    --max-sessions "$SESSIONS" --step-timeout 60 --idle-timeout 900 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
deadline=$((SECONDS + 60))
until "$PYTHON" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)" \
    "http://127.0.0.1:$PORT/health" 2>/dev/null; do
    kill -0 "$server" 2>/dev/null || fail "omnienv serve exited before it was healthy (is port $PORT free?)"
    ((SECONDS < deadline)) || fail "omnienv serve was not healthy within 60 s"
    sleep 0.1
done

if [[ "$ASYNC" == 1 ]]; then
    generate=(--async-grpo --vllm-server-url "$VLLM_URL")
else
    generate=(--vllm "$VLLM" --vllm-server-url "$VLLM_URL")
fi
HF_HUB_OFFLINE=1 TRL_EXPERIMENTAL_SILENCE=1 "$PYTHON" examples/train_wordle_grpo.py \
    --model "$MODEL" --env "http://127.0.0.1:$PORT" "${generate[@]}" --steps "$STEPS" --output-dir "$OUT"
