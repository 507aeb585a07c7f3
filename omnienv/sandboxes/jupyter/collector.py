"""Gathers one execution's iopub messages into a bounded :class:`~omnienv.sandboxes.cells.CellOutput`.

Everything a message carries is checked before it is kept: the kernel is the agent's, so a field
may be of any type or size (within the channel's frame limit), and its text may hold a lone
surrogate (U+FFFD here, as :mod:`omnienv.core.text` says). An image is kept only if its
base64 text fits ``image_bytes`` once decoded (checked before decoding) and is a PNG that decodes
whole, of at most :data:`IMAGE_PIXELS` (checked from its header before it is decoded).
"""

from __future__ import annotations

import base64
import binascii
import io
import reprlib
from typing import Any

from omnienv.core.text import valid_text
from omnienv.sandboxes.cells import BoundedText, CellError, CellOutput, OutputLimits, strip_ansi

__all__ = ["OutputCollector"]

_NAME_CHARS = 200
_VALUE_CHARS = 2_000
_RESULTS = 5
IMAGE_PIXELS = 1 << 23
"""The most pixels an image may have (8.4 million, 3000 x 2800 say): it is decoded to be checked."""
_SHORT = reprlib.Repr()
"""For a field that should be text and is not: its JSON may nest a thousand deep, past what ``repr``
walks before a RecursionError (which voided the episode); this one stops a few levels down."""


def _text(value: Any, limit: int) -> str:
    """``value`` as text of at most ``limit`` characters (and a note), lone surrogates replaced: the
    kernel's JSON may escape one (``"\\ud800"``), which no encoder after this takes."""
    text = value if isinstance(value, str) else _SHORT.repr(value)
    text = text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} characters omitted ...]"
    return valid_text(text)


def _decodes_as_png(raw: bytes) -> bool:
    """Whether ``raw`` is a whole PNG of at most :data:`IMAGE_PIXELS`: a model's API refuses any other
    bytes sent as one, and the eval flagged the request that failed (and the agent's episode with it)."""
    from PIL import Image  # matplotlib's own dependency, so here wherever a local kernel is

    try:
        with Image.open(io.BytesIO(raw), formats=["PNG"]) as image:
            width, height = image.size
            if width * height > IMAGE_PIXELS:  # checked before decoding: a few kilobytes inflate to gigabytes
                return False
            image.load()
    except Exception:  # Pillow raises many kinds for bad data: each means "not a PNG"
        return False
    return True


class OutputCollector:
    """One cell's outputs, bounded as they come (see the module docs)."""

    def __init__(self, limits: OutputLimits) -> None:
        self.limits = limits
        self.stdout = BoundedText(limits.stream_chars)
        self.stderr = BoundedText(limits.stream_chars)
        self.results: list[str] = []
        self.notes: list[str] = []
        self.error: CellError | None = None
        self.dropped_images = 0
        self._unchecked_images: list[bytes] = []
        """At most ``limits.images`` a cell, each to be decoded by :meth:`output`, kept or not."""

    def add(self, msg: dict[str, Any]) -> None:
        kind, content = msg.get("msg_type"), msg.get("content")
        if not isinstance(content, dict):
            return
        if kind == "stream":
            target = self.stderr if content.get("name") == "stderr" else self.stdout
            target.add(_text(content.get("text", ""), self.limits.stream_chars * 2))
        elif kind in ("execute_result", "display_data"):
            data = content.get("data")
            if isinstance(data, dict):
                self._add_data(data)
        elif kind == "error":
            self._add_error(content)

    def _add_error(self, content: dict[str, Any]) -> None:
        frames = content.get("traceback", [])
        frames = frames if isinstance(frames, list) else [frames]
        limit = self.limits.traceback_chars
        traceback = strip_ansi("\n".join(_text(frame, limit * 2) for frame in frames[-200:]))
        if len(traceback) > limit:
            traceback = "[... traceback shortened ...]\n" + traceback[-limit:]
        name = _text(content.get("ename", "Error"), _NAME_CHARS)
        self.error = CellError(name, _text(content.get("evalue", ""), _VALUE_CHARS), traceback)

    def _add_data(self, data: dict[str, Any]) -> None:
        png = data.get("image/png")
        if png:
            self._add_image(png)
            return
        text = data.get("text/plain")
        if text is not None and len(self.results) < _RESULTS:
            self.results.append(_text(strip_ansi(_text(text, 1 << 30)), self.limits.result_chars))

    def _add_image(self, png: Any) -> None:
        fits = isinstance(png, str) and len(png) <= (self.limits.image_bytes + 2) // 3 * 4 + 8
        if not fits or len(self._unchecked_images) >= self.limits.images:
            self.dropped_images += 1
            return
        try:
            raw = base64.b64decode(png, validate=False)
        except (binascii.Error, ValueError):
            self.dropped_images += 1
            return
        if len(raw) <= self.limits.image_bytes:
            self._unchecked_images.append(raw)
        else:
            self.dropped_images += 1

    def output(self) -> CellOutput:
        """The cell's output. Its images are decoded here, milliseconds each: call it off the event loop."""
        images = [raw for raw in self._unchecked_images if _decodes_as_png(raw)]
        dropped = self.dropped_images + len(self._unchecked_images) - len(images)
        notes = list(self.notes)
        if dropped:
            notes.append(
                f"{dropped} image(s) not shown (at most {self.limits.images} per "
                f"cell, PNG of {self.limits.image_bytes} bytes and {IMAGE_PIXELS:,} pixels each)."
            )
        return CellOutput(self.stdout.value(), self.stderr.value(), list(self.results), images, self.error, None, notes)
