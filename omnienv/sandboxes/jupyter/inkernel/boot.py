"""The kernel's entry point inside the sandbox: ``python -I -B boot.py CONFIG_JSON``.

1. A lifeline thread ends the kernel when the owner's end of the lifeline pipe closes, which
   happens however the owner dies, even before bubblewrap's own death signal is armed.
2. The kernel's packages (a site directory of only what the kernel needs) go on ``sys.path``.
3. ipykernel is initialised (its sockets bound), then the output bounds and the shell helper
   are installed and the modules to preload imported.
4. One byte on the ready pipe tells the host the kernel is ready; then ipykernel's event loop.

Runs as a plain script with the sandbox's interpreter; imports nothing of omnienv.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import threading
from types import ModuleType
from typing import Any


def _watch_lifeline(fd: int) -> None:
    def watch() -> None:
        try:
            os.read(fd, 1)
        except OSError:
            return
        os._exit(70)

    threading.Thread(target=watch, name="sandbox-lifeline", daemon=True).start()


def _load(name: str, path: str) -> ModuleType:
    """A sibling module by path, under a private name (the kernel's ``sys.path`` does not hold it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _silence_echo() -> None:
    """ipykernel echoes fd-level output to the original stdout/stderr: send that copy to /dev/null.

    The originals lead to the host's log pipe, which nobody reads once the kernel has started; a
    full pipe would block ipykernel's output thread.
    """
    null = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        copy = getattr(stream, "_original_stdstream_copy", None)
        if isinstance(copy, int):
            os.dup2(null, copy)
    os.close(null)


def main(config: dict[str, Any]) -> None:
    _watch_lifeline(config["lifeline"])
    if sys.path and sys.path[0] in ("", os.path.dirname(os.path.abspath(__file__))):
        del sys.path[0]
    sys.path.append(config["site"])
    here = os.path.dirname(os.path.abspath(__file__))
    output = _load("_sandbox_output", os.path.join(here, "output.py"))
    shell = _load("_sandbox_shell", os.path.join(here, "shell.py"))

    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    # parent_handle=1: no parent poller (the lifeline does that) and no console banner.
    app.initialize(["-f", config["connection_file"], "--IPKernelApp.parent_handle=1"])
    # traitlets leaves the logger at DEBUG and filters in its handler (at WARNING), so every one of
    # ipykernel's debug calls built a record only to drop it: 5% of a cell's CPU in the kernel.
    app.log.setLevel(app.log_level)
    output.install(app, config["limits"])
    shell.install(app.shell)
    for name in config.get("preload", ()):
        importlib.import_module(name)
    _silence_echo()
    os.write(config["ready"], b"1")
    os.close(config["ready"])
    app.start()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
