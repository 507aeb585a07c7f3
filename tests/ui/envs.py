"""Small environments for the page tests: every JSON Schema field kind, and an image result."""

from __future__ import annotations

import json
import random
import struct
import zlib
from typing import Literal

from omnienv.core import Environment, ImageBlock, Task, ToolResult, tool


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG, so image tests need no imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


class Forms(Environment):
    """Echoes the arguments it gets, so a test sees exactly what a form sent."""

    name = "forms"
    splits = ("demo",)
    max_turns = 20

    @classmethod
    def tasks(cls, split: str) -> list[Task]:
        return [Task(f"{split}/{i}", split, data={"level": i}) for i in range(3)]

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return f"Fill in the forms (task {task.id if task else 'none'})."

    @tool
    def record(
        self,
        text: str,
        count: int,
        ratio: float,
        flag: bool,
        color: Literal["red", "green"],
        point: list[int],
        tags: list[str] | None = None,
        note: str | None = None,
    ) -> str:
        """Echo every argument as JSON.

        Args:
            text: Any text.
            count: A whole number.
            ratio: Any number.
            flag: On or off.
            color: One of two colours.
            point: [x, y].
            tags: Labels, one per line.
            note: Optional remark.
        """
        args = {
            "text": text,
            "count": count,
            "ratio": ratio,
            "flag": flag,
            "color": color,
            "point": point,
            "tags": tags,
            "note": note,
        }
        return "ARGS " + json.dumps(args, sort_keys=True)

    @tool
    def picture(self) -> ToolResult:
        """Return a 40x30 green picture (clicking it fills the point field)."""
        return ToolResult.of(["a green picture", ImageBlock(png(40, 30, (20, 200, 20)))])

    @tool
    def snap(self) -> ToolResult:
        """Return a 40x30 red picture and end the episode with reward 1."""
        return ToolResult.of(
            ["a red picture", ImageBlock(png(40, 30, (220, 20, 20)))], reward=1.0, done=True, info={"success": True}
        )
