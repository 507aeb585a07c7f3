"""Code that runs inside the kernel's sandbox, not in the server.

These modules are mounted read-only into the sandbox, one file each (at ``/opt/kernel/``), and
run there by the sandbox's own interpreter: they import only the standard library and the
kernel's packages, never omnienv, which is not in the sandbox. Nothing here is trusted by the
host: the agent's code runs in the same process and can undo any of it, so the host enforces
every limit again on its side (see :mod:`omnienv.sandboxes.jupyter.channels`).

- :mod:`.boot`: the entry point: the lifeline to the owner, the kernel's ``sys.path``, the
  output bounds and the shell helper installed, then ipykernel's event loop;
- :mod:`.output`: bounds on every message the kernel sends (streams, results, displays, errors);
- :mod:`.shell`: the helper behind the ``execute_shell_command`` tool.
"""

__all__: list[str] = []
