"""``omnienv serve --workers N``: N worker processes on one port, and their supervisor.

The supervisor (the process ``omnienv serve`` started in) binds the TCP port once, so the port
is chosen as for one process (port 0 included), makes a private directory (mode 0700) with one
Unix socket per worker, and starts N workers (``spawn``: no state shared by accident). Each
worker builds its own app (its own environments, sessions and reaper), accepts on the port and
on its own Unix socket, and routes every request by the one rule of
:mod:`omnienv.server.workers` (:class:`~omnienv.server.forward.WorkerRouter`).

Where connections land decides where new sessions live, so the port is spread evenly: on Linux
the supervisor gives each worker its own listening socket on the port (``SO_REUSEPORT``: the
kernel hashes each new connection to one of them); workers sharing one socket would not do, as
an event loop woken by a burst of connections accepts them all (64 WebSockets opened at once
land about 44/20 on two workers, and all of one keep-alive pool on one). Elsewhere, and when
the port was not bound with :func:`bind`, the workers share the one socket.

``--max-sessions`` stays the server's total: each worker holds its share
(:meth:`~omnienv.server.workers.WorkerPlace.share`), and a full worker refuses new sessions with
``CAPACITY_REACHED`` even if a sibling has room. ``/health`` is the answering worker's (its
sessions against its share), and says ``starting`` (503) until every worker has started, so a
client that waits for health spreads its sessions over all of them.

Stopping: SIGINT or SIGTERM stops every worker gracefully (SIGKILL after the grace period),
removes the directory and returns. A worker that exits on its own (a crash, an OOM kill) stops
the whole server with :class:`~omnienv.core.errors.WorkerLostError`, never a restart: its
sessions are gone, and a process manager restarting the server is more truthful than a server
whose sessions silently vanish. Each worker alone holds its listening sockets, so while the
server stops, a request for the lost worker's sessions gets ``WORKER_LOST`` at once and new
connections reach the live workers, none waiting on a socket nobody accepts from. Workers die
with the supervisor even if it is SIGKILLed (Linux's parent-death signal), so no worker outlives it.

A worker that *stalls* is lost as surely as one that exits, but nothing would say so: its event
loop wedged (a deadlocked or runaway environment call, SIGSTOP), the kernel still queues its share
of new connections on its socket, its sessions hang and ``/health`` (answered by whichever worker
the kernel picks) may say ok. So each worker's loop beats, one byte down the pipe it said
"started" on, every second (more often under a short timeout), and the supervisor SIGKILLs a
started worker it has not heard from for ``ServerConfig.worker_stall_timeout`` seconds
(``--worker-stall-timeout``, default 60; 0 disables it) and stops the server with the same
:class:`~omnienv.core.errors.WorkerLostError`. The beat comes from the loop itself, not a thread,
so a loop that runs no more stops it; an environment that rightly holds the loop that long (none
should: ``check_env`` fails a call holding it over half a second) needs a longer timeout, or
better, its blocking work moved off the loop. A worker still starting is not timed: its ``/health``
says ``starting`` meanwhile.
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from omnienv.core.errors import WorkerLostError
from omnienv.server.config import ServerConfig
from omnienv.server.workers import WorkerPlace

__all__ = ["AppFactory", "bind", "check_workers", "serve_workers"]

AppFactory = Callable[[ServerConfig], Any]
"""Builds one worker's ASGI app from its config (e.g. ``functools.partial(create_app, "wordle")``);
it is pickled into each worker, so it must be importable by name (no lambdas)."""
GRACE = 15.0
"""Seconds a stopping worker gets (uvicorn gives requests 5 of them) before SIGKILL."""
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_SOCKET_PATH_BYTES = 107
_SPREAD = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")
"""Linux spreads a port's connections over the sockets bound to it with SO_REUSEPORT (BSDs do not)."""
_PR_SET_PDEATHSIG = 1
BEAT_INTERVAL = 1.0
"""Seconds between a worker's heartbeats (a quarter of the stall timeout when that is shorter)."""
_STARTED = b"s"
_BEAT = b"."


class _Stop(Exception):
    """SIGINT or SIGTERM reached the supervisor."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop(signal.Signals(signum).name)


def check_workers(workers: int, config: ServerConfig | None = None) -> None:
    """``ValueError`` naming what is wrong with serving ``config`` on ``workers`` processes."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1 (1: one process, as without it), got {workers!r}")
    if config is None:
        return
    if config.max_sessions < workers:
        raise ValueError(
            f"max_sessions ({config.max_sessions}) must be at least workers ({workers}): "
            "--max-sessions is the server's total, split across its workers"
        )
    if workers > 1 and config.agent_only and not config.operator_token:
        raise ValueError("an agent-only server of several workers needs one operator_token for all of them")


def bind(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound (``port=0``: the OS picks a free one), not yet listening;
    on Linux with ``SO_REUSEPORT``, so that each worker can get a socket of its own on the port.

    The port is first bound without ``SO_REUSEPORT``: a port another server holds, even one that
    set ``SO_REUSEPORT`` itself (another ``--workers`` server), is refused (``EADDRINUSE``) rather
    than shared with it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if _SPREAD:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
            port = probe.getsockname()[1]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if _SPREAD:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _listeners(sock: socket.socket, workers: int) -> list[socket.socket]:
    """One listening socket per worker on ``sock``'s address (the kernel spreads connections over
    them), or ``sock`` shared by all when the platform or ``sock`` cannot.

    When spreading, ``sock`` itself only holds the port (bound, never listening): a listening
    socket whose worker died would go on taking its share of new connections for nobody, so
    each listening one belongs to its worker alone (:func:`serve_workers` closes its copies)."""
    spread: list[socket.socket] = []
    if (
        _SPREAD
        and sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT)
        and not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    ):
        try:
            for _ in range(workers):
                sibling = socket.socket(sock.family, socket.SOCK_STREAM)
                spread.append(sibling)
                sibling.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sibling.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                sibling.bind(sock.getsockname())
                sibling.listen(4096)
            return spread
        except OSError:
            for sibling in spread:
                sibling.close()
    sock.listen(4096)
    return [sock] * workers


def _private_directory(workers: int) -> str:
    """A new directory (mode 0700: this user's alone) for the workers' private sockets: under
    TMPDIR, or under /tmp where TMPDIR is too deep for a socket's path (107 bytes on Linux)."""
    directory = tempfile.mkdtemp(prefix="omnienv-workers-")
    if len(os.fsencode(os.path.join(directory, f"worker-{workers - 1}.sock"))) <= _SOCKET_PATH_BYTES:
        return directory
    os.rmdir(directory)
    return tempfile.mkdtemp(prefix="omnienv-workers-", dir="/tmp")


def serve_workers(factory: AppFactory, config: ServerConfig, sock: socket.socket, workers: int, **options: Any) -> None:
    """Serve ``factory``'s app on ``sock`` with ``workers`` processes until SIGINT or SIGTERM.

    ``options`` go to :func:`~omnienv.server.run.uvicorn_config` in each worker (``log_level``).
    Raises :class:`WorkerLostError` when a worker exits on its own or stalls (``config``'s
    ``worker_stall_timeout``); every worker is stopped and the private directory removed whatever
    happens.
    """
    check_workers(workers, config)
    token = secrets.token_urlsafe(32)
    host, port = sock.getsockname()[:2]
    directory = _private_directory(workers)
    context = multiprocessing.get_context("spawn")
    processes: list[BaseProcess] = []
    listeners: list[socket.socket] = []
    public = _listeners(sock, workers)
    listeners.extend(set(public) - {sock})  # the caller's own socket stays the caller's to close
    everyone_up = context.Event()
    stall = config.worker_stall_timeout
    beat = None if stall is None else min(BEAT_INTERVAL, stall / 4)
    heard: list[Connection] = []
    previous = {sig: signal.signal(sig, _stop) for sig in _SIGNALS}
    try:
        for index in range(workers):
            place = WorkerPlace(index, workers, directory)
            private = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listeners.append(private)
            private.bind(place.socket_path(index))
            private.listen(4096)  # requests forwarded before the worker is up wait here
            worker_config = replace(config, place=place, max_sessions=place.share(config.max_sessions))
            hears, tells = context.Pipe(duplex=False)
            sockets = [public[index], private]
            process = context.Process(
                target=_work,
                args=(factory, worker_config, token, sockets, host, port, options, tells, everyone_up, beat),
                name=f"omnienv-worker-{index}",
            )
            process.start()
            tells.close()  # the worker's end: ours closed, a worker dying before it tells is an EOF
            # The worker has its own copies of its sockets now. Ours closed, a worker that dies takes
            # them with it: its sibling's forwards are refused at once (WORKER_LOST) and the kernel
            # spreads new connections over the live workers, rather than queue both for nobody.
            private.close()
            if public[index] is not sock:
                public[index].close()
            processes.append(process)
            heard.append(hears)
        _watch(processes, heard, everyone_up, stall)
    except _Stop:
        pass
    finally:
        _stop_all(processes)
        for listener in listeners:
            listener.close()
        for hears in heard:
            hears.close()
        shutil.rmtree(directory, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _watch(processes: list[BaseProcess], pipes: list[Connection], everyone_up: Any, stall: float | None) -> None:
    """Set ``everyone_up`` once every worker has said it started; block until a worker exits, or
    says nothing for ``stall`` seconds once started, then raise why (SIGINT or SIGTERM interrupt it
    with ``_Stop``). Every wake reads all that each pipe holds and checks every worker's silence, so
    one worker's beats never hide another's."""
    by_sentinel = {process.sentinel: process for process in processes}
    by_pipe = dict(zip(pipes, processes, strict=True))
    listening = list(pipes)
    starting = set(processes)
    heard: dict[BaseProcess, float] = {}  # when each started worker last said anything
    while True:
        due = None if stall is None or not heard else max(0.0, min(heard.values()) + stall - time.monotonic())
        woke = wait([*by_sentinel, *listening], due)
        ended = next((by_sentinel[item] for item in woke if isinstance(item, int)), None)
        if ended is not None:
            raise _exited(ended)
        now = time.monotonic()
        for item in woke:
            assert isinstance(item, Connection)
            process = by_pipe[item]
            said = os.read(item.fileno(), 4096)
            if not said:  # it is exiting: its sentinel comes next (or its stall, if it hangs on the way)
                listening.remove(item)
                continue
            if _STARTED in said and process in starting:
                starting.remove(process)
                if not starting:
                    everyone_up.set()
            if process not in starting:
                heard[process] = now
        if stall is None:
            continue
        quiet = next((process for process, last in heard.items() if now - last >= stall), None)
        if quiet is not None:
            raise _stalled(quiet, stall)


def _stalled(quiet: BaseProcess, stall: float) -> WorkerLostError:
    quiet.kill()  # SIGKILL: a wedged loop never acts on SIGTERM, and a stopped process never sees it
    quiet.join()
    return WorkerLostError(
        f"{quiet.name} (pid {quiet.pid}) stalled: its event loop did not answer for {stall:g} s, so it was "
        "killed (SIGKILL): the server stopped, its sessions are lost (an environment call holding the loop, or a "
        "stopped process; --worker-stall-timeout sets how long a worker may stall, 0: no limit)"
    )


def _exited(ended: BaseProcess) -> WorkerLostError:
    ended.join()
    code = ended.exitcode
    how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"code {code}"
    return WorkerLostError(
        f"{ended.name} (pid {ended.pid}) exited with {how}: the server stopped, its sessions are lost "
        "(its log above says why)"
    )


def _stop_all(processes: list[BaseProcess]) -> None:
    """SIGTERM every worker, wait up to :data:`GRACE` (a second signal cuts it short), SIGKILL the rest."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + GRACE
    try:
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
    except _Stop:
        pass  # asked twice: no more waiting
    for sig in _SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    for process in processes:
        if process.is_alive():
            process.kill()
        process.join()


# -- in each worker -------------------------------------------------------------------------------


def _work(
    factory: AppFactory,
    config: ServerConfig,
    token: str,
    sockets: list[socket.socket],
    host: str,
    port: int,
    options: dict[str, Any],
    tells: Connection,
    everyone_up: Any,
    beat: float | None,
) -> None:
    """One worker: build the app, route it, serve it on the port and on its private socket, tell
    the supervisor once it serves, and then every ``beat`` seconds that its loop still runs."""
    from omnienv.server.forward import WorkerRouter
    from omnienv.server.run import Server, uvicorn_config

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the supervisor's to act on (until uvicorn's own)
    assert config.place is not None
    router = WorkerRouter(factory(config), config.place, token, everyone_up.is_set)

    class Worker(Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                os.write(tells.fileno(), _STARTED)
                if beat is not None:  # held: the loop keeps only a weak reference to its tasks
                    self.beating = asyncio.get_running_loop().create_task(_beat(tells.fileno(), beat))

    server = Worker(uvicorn_config(router, host, port, **options))
    server.run(sockets=sockets)
    if not server.started:
        sys.exit(3)  # start-up failed; uvicorn's log says why


async def _beat(fd: int, interval: float) -> None:
    """Tell the supervisor, from the event loop itself, that it still runs: a wedged loop stops
    beating. A beat the pipe has no room for (the supervisor held up for hours) is dropped: the
    loop never waits on the supervisor."""
    os.set_blocking(fd, False)
    while True:
        await asyncio.sleep(interval)
        try:
            os.write(fd, _BEAT)
        except BlockingIOError:
            continue
        except OSError:  # the supervisor is gone; the parent-death signal follows
            return


def _die_with_parent() -> None:
    """Get SIGTERM when the supervisor dies, however it dies (Linux); if it is already gone, go."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    parent = multiprocessing.parent_process()
    if parent is not None and not parent.is_alive():
        sys.exit(1)
