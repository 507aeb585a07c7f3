"""The host's own X connection to one display: input through XTEST, facts through X-Resource.

No process per action and no command line: a key is a validated keysym (see
:func:`omnienv.sandboxes.desktop_keys.parse_keys`) pressed with ``XTestFakeInput``
(:mod:`~omnienv.sandboxes.xvfb.keyboard`); window facts (owner pid, geometry, title) come from the
server itself (:mod:`~omnienv.sandboxes.xvfb.windows`).

Every method is blocking and runs under one lock; :class:`~omnienv.sandboxes.xvfb.display.XvfbDisplay`
calls them from a worker thread with a deadline. A client on the display may kill this connection
(``XKillClient``): the next call reconnects once.

python-xlib waits for its socket with ``select.select``, which refuses a descriptor numbered 1024
or more: in a process holding many sessions (each desktop keeps about 6 files open) no display
past the 170th could connect. Its connections wait with ``poll(2)`` instead
(:class:`~omnienv.sandboxes.polling.SelectOnPoll`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from omnienv.core.errors import ToolError
from omnienv.sandboxes.desktop import Combo, DisplayError, Window
from omnienv.sandboxes.polling import SelectOnPoll
from omnienv.sandboxes.xvfb import windows
from omnienv.sandboxes.xvfb.keyboard import Keyboard
from omnienv.sandboxes.xvfb.server import SOCKETS

__all__ = ["XClient", "XConnectionLost", "XRequestFailed"]

T = TypeVar("T")


class XConnectionLost(DisplayError):
    """The X connection broke (the server died or a client killed our connection)."""


class XRequestFailed(ToolError):
    """The X server refused a request twice (what it names changed meanwhile, or a client broke it)."""


def _xlib() -> Any:
    from Xlib import X, error
    from Xlib import display as xdisplay

    return X, error, xdisplay


def _connect_to_abstract_sockets() -> None:
    """Have python-xlib connect to a local display's abstract socket, as libxcb (and so ``mss``)
    does, before any socket file.

    Each X server's socket file lies in its session's own directory: a file of the same name in
    the host's ``/tmp/.X11-unix`` belongs to another X server, or to a dead one, and python-xlib
    would use it (and stop there) when it exists.
    """
    from Xlib.support import unix_connect

    if getattr(unix_connect.get_socket, "abstract_first", False):
        return
    file_first = unix_connect.get_socket

    def get_socket(dname: str, protocol: str | None, host: str | None, dno: int) -> socket.socket:
        if protocol in (None, "unix") and host in (None, "", "unix"):
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                connection.connect(f"\0{SOCKETS}/X{dno}")
                return connection
            except OSError:
                connection.close()
        return file_first(dname, protocol, host, dno)

    get_socket.abstract_first = True  # type: ignore[attr-defined]
    unix_connect.get_socket = get_socket


class XClient:
    """One host connection to display ``name`` (made on first use, remade once if killed)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.RLock()
        self._display: Any = None
        self._keyboard = Keyboard()
        self._helper: Any = None

    # -- the connection ------------------------------------------------------------------------

    def _connect(self) -> Any:
        _, error, xdisplay = _xlib()
        from Xlib.protocol import display as protocol
        from Xlib.protocol import event

        protocol.select = SelectOnPoll  # python-xlib's one way of waiting (see the module's docstring)
        _connect_to_abstract_sockets()
        try:
            display = xdisplay.Display(self.name)
        except Exception as exc:
            raise XConnectionLost(f"cannot connect to X display {self.name}: {exc}") from exc
        # python-xlib 0.33 registers RANDR's and DAMAGE's error codes over the core ones (BadValue...)
        display.display.error_classes.update(error.xerror_class)
        display.set_error_handler(lambda *_: None)  # errors of requests without replies: nothing to do
        # Any client may send any event to a window of ours (SendEvent); python-xlib finds an extension's
        # event by its sub-code and raised KeyError, mid-read, for one it does not know (RANDR's 200)
        for classes in display.display.event_classes.values():
            if type(classes) is dict:
                for subcode in range(256):
                    classes.setdefault(subcode, event.AnyEvent)
        for extension in ("XTEST", "X-Resource"):
            if not display.has_extension(extension):
                display.close()
                raise DisplayError(f"the X server lacks the {extension} extension")
        self._keyboard.reset()
        self._helper = None
        return display

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(display, *args)``; on a broken connection reconnect and try once more."""
        _, error, _ = _xlib()
        with self._lock:
            for attempt in (0, 1):
                if self._display is None:
                    self._display = self._connect()
                try:
                    result = fn(self._display, *args)
                    self._drain(self._display)
                    return result
                except (error.ConnectionClosedError, OSError) as exc:
                    self._drop()
                    if attempt:
                        raise XConnectionLost(f"lost the X connection to {self.name}: {exc}") from exc
                except error.XError as exc:  # a window went away under us, say: once more, then refuse
                    if attempt:
                        raise XRequestFailed(f"the desktop refused the request: {exc}") from exc
        raise AssertionError("unreachable")

    def _drain(self, display: Any) -> None:
        """Read the events the server pushes to every client (MappingNotify): never let them pile up."""
        while display.pending_events():
            display.next_event()

    def _drop(self) -> None:
        display, self._display = self._display, None
        if display is not None:
            with contextlib.suppress(Exception):
                display.close()

    def close(self) -> None:
        self.abort()
        with self._lock:
            self._drop()

    def abort(self) -> None:
        """Break the connection under a call that is stuck on it (a client holds the server), without its lock.

        The stuck thread then fails at once instead of waiting, forever, for the grab to end.
        """
        display = self._display
        sock = getattr(getattr(display, "display", None), "socket", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    # -- pointer -------------------------------------------------------------------------------

    def move(self, x: int, y: int) -> None:
        X, _, _ = _xlib()
        self.call(lambda d: (d.xtest_fake_input(X.MotionNotify, x=x, y=y), d.sync()))

    def buttons(self, events: Sequence[tuple[int, bool]], at: tuple[int, int] | None = None) -> None:
        """Move to ``at``, then send (button, pressed) events."""
        X, _, _ = _xlib()

        def run(d: Any) -> None:
            if at is not None:
                d.xtest_fake_input(X.MotionNotify, x=at[0], y=at[1])
            for button, pressed in events:
                d.xtest_fake_input(X.ButtonPress if pressed else X.ButtonRelease, button)
            d.sync()

        self.call(run)

    def pointer_state(self) -> int:
        """The logical state of the buttons and modifiers (X's mask), as the next event will carry it."""
        return self.call(lambda d: d.screen().root.query_pointer().mask)

    def pointer(self) -> tuple[int, int]:
        def run(d: Any) -> tuple[int, int]:
            reply = d.screen().root.query_pointer()
            return reply.root_x, reply.root_y

        return self.call(run)

    # -- keyboard ------------------------------------------------------------------------------

    def press_combos(self, combos: Sequence[Combo], down: bool = True, up: bool = True) -> None:
        """Press (and/or release) each combo in turn: modifiers down, key, modifiers up."""
        self.call(self._keyboard.press_combos, combos, down, up)

    def type_text(self, text: str) -> None:
        """Type ``text`` as key presses ("\\n" is Return); shift is held for shifted characters."""
        self.call(self._keyboard.type_text, text)

    # -- windows and the selection -------------------------------------------------------------

    def windows(self) -> list[Window]:
        """Top-level client windows, with the host pid of the client that owns each."""
        return self.call(windows.list_windows)

    def owner_pid(self, resource: int) -> int | None:
        return self.call(lambda d: windows.client_pids(d, [resource]).get(resource))

    def selection(self, accept: Callable[[int | None], bool] = lambda _: True) -> tuple[int | None, str] | None:
        """(owner pid, text) of PRIMARY; the text is asked for only when ``accept(owner pid)``."""
        from Xlib import X

        def run(d: Any) -> tuple[int | None, str] | None:
            if self._helper is None:
                self._helper = d.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
            return windows.read_selection(d, self._helper, accept)

        return self.call(run)

    def configure(self, window_id: int, x: int, y: int, width: int, height: int) -> None:
        self.call(windows.configure, window_id, x, y, width, height)

    def wait_managed(self, deadline: float, alive: Callable[[], bool]) -> bool:
        """Block until a window manager manages windows (see :func:`~omnienv.sandboxes.xvfb.windows.wait_managed`)."""
        return self.call(windows.wait_managed, deadline, alive)
