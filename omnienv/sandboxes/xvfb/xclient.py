"""The host's own X connection to one display: input through XTEST, facts through X-Resource.

No process per action and no command line: a key is a validated keysym (see
:func:`omnienv.sandboxes.desktop.parse_keys`) pressed with ``XTestFakeInput``; text is typed
character by character, a character missing from the keymap through a scratch keycode that is
mapped once and kept (remapping a keycode while an app still reads earlier presses of it would
garble them). Window facts (owner pid, geometry, title) come from the server itself: the owner
is the X client's real pid as the server saw it connect (``XResQueryClientIds``), not the
``_NET_WM_PID`` property any client can set.

Every method is blocking and runs under one lock; :class:`~omnienv.sandboxes.xvfb.display.XvfbDisplay`
calls them from a worker thread with a deadline. A client on the display may kill this connection
(``XKillClient``): the next call reconnects once.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from omnienv.core.errors import ToolError
from omnienv.sandboxes.desktop import MODIFIERS, Combo, DisplayError, Window, char_keysym

__all__ = ["XClient", "XConnectionLost", "XRequestFailed"]

T = TypeVar("T")
MAX_WINDOWS = 512
"""Windows looked at per query: an agent that opens thousands cannot make checks slow."""
TITLE_BYTES = 1024
SELECTION_BYTES = 64 * 1024
SELECTION_TIMEOUT = 2.0
PROBE_PATIENCE = 0.15


class XConnectionLost(DisplayError):
    """The X connection broke (the server died or a client killed our connection)."""


class XRequestFailed(ToolError):
    """The X server refused a request twice (what it names changed meanwhile, or a client broke it)."""


def _xlib() -> Any:
    from Xlib import X, error
    from Xlib import display as xdisplay

    return X, error, xdisplay


def _atoms() -> Any:
    from Xlib import Xatom

    return Xatom


class XClient:
    """One host connection to display ``name`` (made on first use, remade once if killed)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.RLock()
        self._display: Any = None
        self._scratch: OrderedDict[int, int] = OrderedDict()  # keycode -> keysym we mapped there
        self._helper: Any = None

    # -- the connection ------------------------------------------------------------------------

    def _connect(self) -> Any:
        _, error, xdisplay = _xlib()
        try:
            display = xdisplay.Display(self.name)
        except Exception as exc:
            raise XConnectionLost(f"cannot connect to X display {self.name}: {exc}") from exc
        # python-xlib 0.33 registers RANDR's and DAMAGE's error codes over the core ones (BadValue...)
        display.display.error_classes.update(error.xerror_class)
        display.set_error_handler(lambda *_: None)  # errors of requests without replies: nothing to do
        for extension in ("XTEST", "X-Resource"):
            if not display.has_extension(extension):
                display.close()
                raise DisplayError(f"the X server lacks the {extension} extension")
        self._scratch.clear()
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

    def buttons(
        self, events: Sequence[tuple[int, bool]], at: tuple[int, int] | None = None, held: Sequence[str] = ()
    ) -> None:
        """Move to ``at``, press ``held`` modifiers, send (button, pressed) events, release modifiers."""
        X, _, _ = _xlib()

        def run(d: Any) -> None:
            if at is not None:
                d.xtest_fake_input(X.MotionNotify, x=at[0], y=at[1])
            codes = self._modifier_codes(d, held)
            for code in codes:
                d.xtest_fake_input(X.KeyPress, code)
            for button, pressed in events:
                d.xtest_fake_input(X.ButtonPress if pressed else X.ButtonRelease, button)
            for code in reversed(codes):
                d.xtest_fake_input(X.KeyRelease, code)
            d.sync()

        self.call(run)

    def pointer(self) -> tuple[int, int]:
        def run(d: Any) -> tuple[int, int]:
            reply = d.screen().root.query_pointer()
            return reply.root_x, reply.root_y

        return self.call(run)

    # -- keyboard ------------------------------------------------------------------------------

    def _keymap(self, d: Any) -> tuple[dict[int, tuple[int, bool]], list[int]]:
        """keysym -> (keycode, needs shift) from the server's current map, and the empty keycodes."""
        first, last = d.display.info.min_keycode, d.display.info.max_keycode
        found: dict[int, tuple[int, bool]] = {}
        empty = []
        for offset, syms in enumerate(d.get_keyboard_mapping(first, last - first + 1)):
            code = first + offset
            if not any(syms):
                empty.append(code)
            for level, keysym in enumerate(syms[:2]):
                if keysym and (keysym not in found or (not level and found[keysym][1])):
                    found[keysym] = (code, bool(level))
        return found, empty

    def _code(
        self, d: Any, keysym: int, keymap: dict[int, tuple[int, bool]], empty: list[int], used: set[int]
    ) -> tuple[int, bool]:
        """The keycode that produces ``keysym``, mapping a scratch keycode when none does."""
        if keysym in keymap:
            return keymap[keysym]
        free = [code for code in empty if code not in self._scratch]
        if free:
            code = free[-1]
        elif self._scratch:
            code = next(iter(self._scratch))  # the least recently used scratch keycode
            if code in used:  # an earlier key of this very text still needs the old mapping
                d.sync()
                time.sleep(0.05)
                used.clear()
        else:
            raise ToolError("the keyboard map has no free keycode left for this character (a program remapped them)")
        self._scratch.pop(code, None)
        self._scratch[code] = keysym
        d.change_keyboard_mapping(code, [(keysym, keysym)])
        d.sync()
        for stale in [k for k, (c, _) in keymap.items() if c == code]:
            del keymap[stale]
        keymap[keysym] = (code, False)
        return code, False

    def _modifier_codes(self, d: Any, names: Iterable[str]) -> list[int]:
        keymap, empty = self._keymap(d) if names else ({}, [])
        return [self._code(d, _keysym(name), keymap, empty, set())[0] for name in names]

    def _shift(self, d: Any, keymap: dict[int, tuple[int, bool]], empty: list[int]) -> int:
        """Shift's keycode (mapped to a scratch keycode if a client took it off the keymap)."""
        return self._code(d, _keysym(MODIFIERS["shift"]), keymap, empty, set())[0]

    def press_combos(self, combos: Sequence[Combo], down: bool = True, up: bool = True) -> None:
        """Press (and/or release) each combo in turn: modifiers down, key, modifiers up."""
        X, _, _ = _xlib()

        def run(d: Any) -> None:
            keymap, empty = self._keymap(d)
            used: set[int] = set()
            for combo in combos:
                codes = [self._code(d, _keysym(name), keymap, empty, used)[0] for name in combo.modifiers]
                code, shifted = self._code(d, combo.keysym, keymap, empty, used)
                if shifted and _keysym(MODIFIERS["shift"]) not in {_keysym(m) for m in combo.modifiers}:
                    codes.append(self._shift(d, keymap, empty))
                used.add(code)
                sequence = [*codes, code]
                if down:
                    for each in sequence:
                        d.xtest_fake_input(X.KeyPress, each)
                if up:
                    for each in reversed(sequence):
                        d.xtest_fake_input(X.KeyRelease, each)
            d.sync()

        self.call(run)

    def type_text(self, text: str) -> None:
        """Type ``text`` as key presses ("\\n" is Return); shift is held for shifted characters."""
        X, _, _ = _xlib()
        keysyms = [char_keysym(char) for char in text.replace("\r\n", "\n")]

        def run(d: Any) -> None:
            keymap, empty = self._keymap(d)
            shift = self._shift(d, keymap, empty)
            used: set[int] = set()
            for keysym in keysyms:
                code, shifted = self._code(d, keysym, keymap, empty, used)
                if code in self._scratch:
                    self._scratch.move_to_end(code)
                used.add(code)
                if shifted:
                    d.xtest_fake_input(X.KeyPress, shift)
                d.xtest_fake_input(X.KeyPress, code)
                d.xtest_fake_input(X.KeyRelease, code)
                if shifted:
                    d.xtest_fake_input(X.KeyRelease, shift)
            d.sync()

        self.call(run)

    # -- windows -------------------------------------------------------------------------------

    def windows(self) -> list[Window]:
        """Top-level client windows (the ones with WM_CLASS, inside frames or not), capped."""
        return self.call(self._windows)

    def _windows(self, d: Any) -> list[Window]:
        X, error, _ = _xlib()
        root = d.screen().root
        wm_class, net_name, utf8 = (d.intern_atom(name) for name in ("WM_CLASS", "_NET_WM_NAME", "UTF8_STRING"))
        found: list[tuple[Any, str, str]] = []
        todo = [(child, 1) for child in root.query_tree().children]
        seen = 0
        while todo and seen < MAX_WINDOWS * 4 and len(found) < MAX_WINDOWS:
            window, depth = todo.pop()
            seen += 1
            try:
                klass = _text(window, wm_class, X.AnyPropertyType)
                if klass is None:
                    if depth < 3:  # a window manager's frame: the client is inside
                        todo.extend((child, depth + 1) for child in window.query_tree().children)
                    continue
                title = _text(window, net_name, utf8)
                if title is None:
                    title = _text(window, _atoms().WM_NAME, X.AnyPropertyType) or ""
                found.append((window, title, klass.split("\0")[1] if "\0" in klass else klass))
            except error.XError:
                continue  # gone meanwhile
        pids = self._pids(d, [window.id for window, _, _ in found])
        windows = []
        for window, title, klass in found:
            try:
                attributes = window.get_attributes()
                geometry = window.get_geometry()
                origin = root.translate_coords(window, 0, 0)
            except error.XError:
                continue
            pid = pids.get(window.id)
            windows.append(
                Window(
                    window.id,
                    title,
                    klass,
                    origin.x,
                    origin.y,
                    geometry.width,
                    geometry.height,
                    attributes.map_state == X.IsViewable,
                    pid,
                    _exe(pid),
                )
            )
        return windows

    def _pids(self, d: Any, resources: Sequence[int]) -> dict[int, int]:
        """resource id -> host pid of the client that owns it (one X-Resource request)."""
        from Xlib.ext import res

        _, error, _ = _xlib()
        if not resources:
            return {}
        mask = d.display.info.resource_id_mask
        by_client: dict[int, int] = {}
        try:
            reply = d.res_query_client_ids([{"client": rid, "mask": res.LocalClientPIDMask} for rid in resources])
            by_client.update({item.spec.client & ~mask: item.value[0] for item in reply.ids if item.value})
        except error.XError:  # one of them is gone: ask one by one
            for rid in resources:
                with contextlib.suppress(error.XError):
                    reply = d.res_query_client_ids([{"client": rid, "mask": res.LocalClientPIDMask}])
                    by_client.update({item.spec.client & ~mask: item.value[0] for item in reply.ids if item.value})
        return {rid: by_client[rid & ~mask] for rid in resources if rid & ~mask in by_client}

    def owner_pid(self, resource: int) -> int | None:
        return self.call(lambda d: self._pids(d, [resource]).get(resource))

    # -- the selection -------------------------------------------------------------------------

    def selection(self, accept: Callable[[int | None], bool] = lambda _: True) -> tuple[int | None, str] | None:
        """(owner pid, text) of PRIMARY; the text is asked for only when ``accept(owner pid)``."""
        return self.call(self._selection, accept)

    def _selection(self, d: Any, accept: Callable[[int | None], bool]) -> tuple[int | None, str] | None:
        X, _, _ = _xlib()
        primary = _atoms().PRIMARY
        owner = d.get_selection_owner(primary)
        if owner == X.NONE or not getattr(owner, "id", 0):
            return None
        pid = self._pids(d, [owner.id]).get(owner.id)
        if not accept(pid):
            return pid, ""
        if self._helper is None:
            self._helper = d.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        target, prop = d.intern_atom("UTF8_STRING"), d.intern_atom("_OMNIENV_SELECTION")
        self._helper.convert_selection(primary, target, prop, X.CurrentTime)
        d.flush()
        deadline = time.monotonic() + SELECTION_TIMEOUT
        while True:
            while d.pending_events():
                event = d.next_event()
                if event.type == X.SelectionNotify and event.requestor == self._helper:
                    if event.property == X.NONE:
                        return pid, ""
                    text = _text(self._helper, prop, X.AnyPropertyType, SELECTION_BYTES) or ""
                    self._helper.delete_property(prop)
                    return pid, text
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return pid, ""  # the owner never answered
            select.select([d.fileno()], [], [], remaining)

    # -- the window manager --------------------------------------------------------------------

    def wait_managed(self, deadline: float, alive: Callable[[], bool]) -> bool:
        """Map a probe window until a window manager reparents one into a frame.

        openbox drops a window mapped during part of its start-up (it is never managed), so a
        probe that is not taken within :data:`PROBE_PATIENCE` is replaced by a fresh one.
        """
        X, _, _ = _xlib()

        def run(d: Any) -> bool:
            while time.monotonic() < deadline and alive():
                probe = d.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent, event_mask=X.StructureNotifyMask)
                try:
                    probe.map()
                    d.flush()
                    patience = min(deadline, time.monotonic() + PROBE_PATIENCE)
                    while time.monotonic() < patience and alive():
                        while d.pending_events():
                            if d.next_event().type == X.ReparentNotify:
                                return True
                        select.select([d.fileno()], [], [], max(0.0, min(0.02, patience - time.monotonic())))
                finally:
                    probe.destroy()
                    d.sync()
            return False

        return self.call(run)


def _keysym(name: str) -> int:
    from omnienv.sandboxes.desktop import _keysyms

    return _keysyms()[name]


def _text(window: Any, prop: int, kind: int, limit: int = TITLE_BYTES) -> str | None:
    """A window's text property, at most ``limit`` bytes (a client may set megabytes)."""
    reply = window.get_property(prop, kind, 0, (limit + 3) // 4)
    if reply is None or reply.format != 8:
        return None
    value = reply.value
    data = value if isinstance(value, bytes) else bytes(value)
    return data[:limit].decode("utf-8", "replace")


def _exe(pid: int | None) -> str | None:
    if pid is None:
        return None
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
