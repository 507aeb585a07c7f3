"""Facts about a display's windows, straight from the X server: what checks may trust.

The owner of a window or a selection is the X client's real pid as the server saw it connect
(``XResQueryClientIds``), not the ``_NET_WM_PID`` property any client can set; geometry is where
the server has the window now. Titles are read too, for people and prompts, never for checks.
Every function takes the live python-xlib display and runs under
:class:`~omnienv.sandboxes.xvfb.xclient.XClient`'s lock; text properties are read capped (a
client may set megabytes).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from omnienv.sandboxes.desktop import Window
from omnienv.sandboxes.polling import wait

__all__ = ["client_pids", "configure", "list_windows", "read_selection", "wait_managed"]

MAX_WINDOWS = 512
"""Windows looked at per query: an agent that opens thousands cannot make checks slow."""
TITLE_BYTES = 1024
SELECTION_BYTES = 64 * 1024
SELECTION_TIMEOUT = 2.0
PROBE_PATIENCE = 0.15


def list_windows(d: Any) -> list[Window]:
    """Top-level client windows (the ones with WM_CLASS, inside frames or not), capped."""
    from Xlib import X, Xatom, error

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
            # _NET_WM_NAME of another type than UTF8_STRING (xdotool writes STRING) reads as empty
            title = _text(window, net_name, utf8) or _text(window, Xatom.WM_NAME, X.AnyPropertyType) or ""
            found.append((window, title, klass.split("\0")[1] if "\0" in klass else klass))
        except error.XError:
            continue  # gone meanwhile
    pids = client_pids(d, [window.id for window, _, _ in found])
    windows = []
    for window, title, klass in found:
        try:
            attributes = window.get_attributes()
            geometry = window.get_geometry()
            origin = root.translate_coords(window, 0, 0)
        except error.XError:
            continue
        pid = pids.get(window.id)
        viewable = attributes.map_state == X.IsViewable
        x, y, width, height = origin.x, origin.y, geometry.width, geometry.height
        windows.append(Window(window.id, title, klass, x, y, width, height, viewable, pid, _exe(pid)))
    return windows


def client_pids(d: Any, resources: Sequence[int]) -> dict[int, int]:
    """resource id -> host pid of the client that owns it (one X-Resource request)."""
    from Xlib import error
    from Xlib.ext import res

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


def read_selection(d: Any, helper: Any, accept: Callable[[int | None], bool]) -> tuple[int | None, str] | None:
    """(owner pid, text) of PRIMARY, asked for through ``helper`` (a window of ours) only when
    ``accept(owner pid)``; None when nobody owns it. The text is asked for as UTF-8, then as
    Latin-1 ``STRING`` (what older Xt programs such as xcalc offer)."""
    from Xlib import X, Xatom

    owner = d.get_selection_owner(Xatom.PRIMARY)
    if owner == X.NONE or not getattr(owner, "id", 0):
        return None
    pid = client_pids(d, [owner.id]).get(owner.id)
    if not accept(pid):
        return pid, ""
    deadline = time.monotonic() + SELECTION_TIMEOUT
    for target in (d.intern_atom("UTF8_STRING"), Xatom.STRING):
        text = _convert(d, helper, target, deadline)
        if text is not None:
            return pid, text
    return pid, ""


def _convert(d: Any, helper: Any, target: int, deadline: float) -> str | None:
    """The selection converted to ``target``, or None if the owner refused or never answered."""
    from Xlib import X, Xatom

    prop = d.intern_atom("_OMNIENV_SELECTION")
    helper.convert_selection(Xatom.PRIMARY, target, prop, X.CurrentTime)
    d.flush()
    while True:
        while d.pending_events():
            event = d.next_event()
            if event.type == X.SelectionNotify and event.requestor == helper:
                if event.property == X.NONE:
                    return None
                data = _property(helper, prop, SELECTION_BYTES)
                helper.delete_property(prop)
                if data is None:
                    return None
                return data.decode("utf-8" if target != Xatom.STRING else "latin-1", "replace")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        wait([d.fileno()], (), remaining)


def configure(d: Any, window_id: int, x: int, y: int, width: int, height: int) -> None:
    """Ask for a client window's place and size (the window manager moves its frame's corner to (x, y))."""
    d.create_resource_object("window", window_id).configure(x=x, y=y, width=width, height=height)
    d.sync()


def wait_managed(d: Any, deadline: float, alive: Callable[[], bool]) -> bool:
    """Map a probe window until a window manager reparents one into a frame.

    openbox drops a window mapped during part of its start-up (it is never managed), so a probe
    that is not taken within :data:`PROBE_PATIENCE` is replaced by a fresh one.
    """
    from Xlib import X

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
                wait([d.fileno()], (), max(0.0, min(0.02, patience - time.monotonic())))
        finally:
            probe.destroy()
            d.sync()
    return False


def _property(window: Any, prop: int, limit: int, kind: int = 0) -> bytes | None:
    """A window's 8-bit property, at most ``limit`` bytes (``kind`` 0: any type)."""
    reply = window.get_property(prop, kind, 0, (limit + 3) // 4)
    if reply is None or reply.format != 8:
        return None
    value = reply.value
    return (value if isinstance(value, bytes) else bytes(value))[:limit]


def _text(window: Any, prop: int, kind: int, limit: int = TITLE_BYTES) -> str | None:
    """A window's text property, at most ``limit`` bytes."""
    data = _property(window, prop, limit, kind)
    return None if data is None else data.decode("utf-8", "replace")


def _exe(pid: int | None) -> str | None:
    if pid is None:
        return None
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
