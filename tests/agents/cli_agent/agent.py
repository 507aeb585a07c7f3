"""A small real agent CLI for the harness-spec tests: the model proposes commands, ``$SHELL`` runs them.

``agent.py INSTRUCTION_FILE`` reads its task from the file, asks an OpenAI-compatible model (base
URL, key and model from ``TINY_BASE_URL``, ``TINY_API_KEY``, ``TINY_MODEL``) for one ``bash`` tool
call per turn, runs each command with ``$SHELL -c`` (nothing of omnienv in it: under the runner
that shell is the shim, so the command runs in the episode's sandbox) and sends back the output and
exit code. It stops when a command's output starts with ``TINY_AGENT_DONE``, when the model answers
without a tool call, or after 40 turns. ``TINY_CRASH_AFTER=N`` makes it exit 3 after N commands and
``TINY_HANG_AFTER=N`` makes it hang (with a child process) after N commands, for the tests of
harnesses that crash or run out of time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from openai import OpenAI

MARKER = "TINY_AGENT_DONE"
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        instruction = handle.read()
    client = OpenAI(base_url=os.environ["TINY_BASE_URL"], api_key=os.environ["TINY_API_KEY"], max_retries=0)
    messages: list[dict] = [
        {"role": "system", "content": f"Run one bash command per turn; finish with `echo {MARKER}`."},
        {"role": "user", "content": instruction},
    ]
    crash = int(os.environ.get("TINY_CRASH_AFTER", "0"))
    hang = int(os.environ.get("TINY_HANG_AFTER", "0"))
    for turn in range(1, 41):
        reply = client.chat.completions.create(model=os.environ["TINY_MODEL"], messages=messages, tools=[BASH])
        message = reply.choices[0].message
        if not message.tool_calls:
            return 0
        call = message.tool_calls[0]
        command = json.loads(call.function.arguments)["command"]
        ran = subprocess.run([os.environ["SHELL"], "-c", command], capture_output=True, text=True)
        output = ran.stdout + ran.stderr
        print(f"$ {command.splitlines()[0]}\n{output}[exit {ran.returncode}]", flush=True)
        messages.append({"role": "assistant", "content": message.content, "tool_calls": [call.model_dump()]})
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"{output}\n[exit code {ran.returncode}]"})
        if output.lstrip().startswith(MARKER):
            return 0
        if turn == crash:
            return 3
        if turn == hang:
            child = subprocess.Popen(["sleep", "300"])  # a child left behind, which the runner must reap too
            print(f"child {child.pid}", flush=True)
            time.sleep(300)
    return 1


if __name__ == "__main__":
    sys.exit(main())
