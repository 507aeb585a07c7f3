"""The host's end of a kernel's ZMQ channels, with a hard limit on what the host will receive.

The kernel bounds its own outputs (:mod:`.inkernel.output`), but the agent's code runs in the
kernel and can send anything on its sockets. So every host socket refuses, before decoding, any
frame over :func:`frame_limit` bytes (``ZMQ_MAXMSGSIZE``: libzmq reads the frame's size and drops
the connection, without allocating it), and holds at most ``RCVHWM`` messages in its queue. A
connection dropped that way does not come back: :meth:`Channels.broken` tells, and the episode
ends as the agent's doing (``output_limit``).

What remains bounded only by the sandbox itself: one multipart message of many frames, each under
the limit, is buffered whole by libzmq before it is delivered
(docs/security.md, "Limits of the Jupyter sandbox, stated plainly").

Every session's sockets come from one context, and a libzmq context makes 1023 sockets by default
(``ZMQ_MAX_SOCKETS``), then refuses with "Too many open files": seven a session (three channels,
two monitors and their peers) stopped one process at 146 sessions, whatever its open-file limit.
The context is allowed as many as libzmq can make (``ZMQ_SOCKET_LIMIT``); the open-file limit
(which a server raises, see :mod:`omnienv.server.run`) and memory bound the count.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

from omnienv.sandboxes.cells import OutputLimits
from omnienv.sandboxes.jupyter.kernel import kernel_limits

__all__ = ["Channels", "frame_limit"]

RCVHWM = 8
"""Messages a host socket queues before it stops reading (the kernel's side then queues or drops)."""


def frame_limit(limits: OutputLimits) -> int:
    """The largest frame the host accepts: what the kernel's own bounds let through, with room."""
    bounds = kernel_limits(limits)
    # text is JSON-encoded as UTF-8 (4 bytes a character at most); images are base64 (ASCII)
    return bounds["image_chars"] + 4 * bounds["message_chars"] + 256 * 1024


@functools.cache
def _context(max_frame: int) -> Any:
    import zmq
    import zmq.asyncio

    context = zmq.asyncio.Context()
    context.set(zmq.MAX_SOCKETS, context.get(zmq.SOCKET_LIMIT))  # before its first socket, as libzmq needs
    context.setsockopt(zmq.MAXMSGSIZE, max_frame)  # a default of every socket made by this context
    context.setsockopt(zmq.RCVHWM, RCVHWM)
    context.setsockopt(zmq.LINGER, 0)
    return context


def _dated_headers(unpack: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """``unpack`` that turns a header's ``date`` into the aware datetime jupyter_client makes of
    it. jupyter_client looks for dates in every header it reads and parses each with dateutil,
    which cost about 13 µs a header, two a message: a tenth of what a cell costs this process.
    Dates already parsed are left as they are, so only the standard library's parser runs."""

    def unpack_dated(data: bytes) -> Any:
        message = unpack(data)
        if type(message) is dict and "msg_id" in message and type(date := message.get("date")) is str:
            with contextlib.suppress(ValueError):
                parsed = datetime.fromisoformat(date)
                if parsed.tzinfo is not None:  # a naive one is left to jupyter_client's rule
                    message["date"] = parsed
        return message

    return unpack_dated


class Channels:
    """An ``AsyncKernelClient`` on the running loop (shell, iopub, control), watched for dropped links."""

    def __init__(self, connection: dict[str, Any], limits: OutputLimits) -> None:
        import zmq
        from jupyter_client.asynchronous.client import AsyncKernelClient

        self.client = AsyncKernelClient(context=_context(frame_limit(limits)))
        self.client.session.unpack = _dated_headers(self.client.session.unpack)
        self.client.load_connection_info(connection)  # type: ignore[arg-type]
        self.client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
        self._monitors = []
        for channel in (self.client.iopub_channel, self.client.shell_channel):
            socket = channel.socket
            self._monitors.append((socket, socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)))

    def broken(self) -> bool:
        """Whether a channel's connection dropped (the kernel died, or sent a frame over the limit)."""
        import zmq

        return any(monitor.getsockopt(zmq.EVENTS) & zmq.POLLIN for _, monitor in self._monitors)

    def close(self) -> None:
        for socket, monitor in self._monitors:
            with contextlib.suppress(Exception):
                socket.disable_monitor()
            with contextlib.suppress(Exception):
                monitor.close(linger=0)
        self._monitors = []
        with contextlib.suppress(Exception):
            self.client.stop_channels()
