"""Content blocks: what an agent reads (text) and sees (images).

Every transport speaks blocks: MCP content, ORS blocks, chat message parts. Keeping one small
set here means each dialect translates from exactly two shapes.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from omnienv.core.pickling import pickled_as_constructor_call

__all__ = ["Block", "ImageBlock", "TextBlock", "as_blocks", "block_from_dict", "blocks_text"]


@pickled_as_constructor_call
@dataclass(slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@pickled_as_constructor_call
@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image as encoded bytes (PNG unless ``mime_type`` says otherwise)."""

    data: bytes
    mime_type: str = "image/png"
    type: Literal["image"] = "image"

    @property
    def base64(self) -> str:
        """The bytes as base64 text, as every JSON transport carries them."""
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """``data:<mime>;base64,...``: how chat APIs take an inline image."""
        return f"data:{self.mime_type};base64,{self.base64}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "image", "data": self.base64, "mime_type": self.mime_type}


Block: TypeAlias = TextBlock | ImageBlock


def block_from_dict(data: dict[str, Any]) -> Block:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(str(data["text"]))
    if kind == "image":
        mime = data.get("mime_type") or data.get("mimeType") or "image/png"
        return ImageBlock(base64.b64decode(data["data"]), mime)
    raise ValueError(f"unknown content block type {kind!r}; expected 'text' or 'image'")


def as_blocks(content: str | Block | Iterable[str | Block]) -> tuple[Block, ...]:
    """Accept what authors naturally return: a string, a block, or a list of either."""
    if isinstance(content, str):
        return (TextBlock(content),)
    if isinstance(content, TextBlock | ImageBlock):
        return (content,)
    if isinstance(content, Iterable) and not isinstance(content, Mapping | bytes | bytearray):
        blocks = tuple(TextBlock(part) if isinstance(part, str) else part for part in content)
        if all(isinstance(block, TextBlock | ImageBlock) for block in blocks):
            return blocks
        content = next(block for block in blocks if not isinstance(block, TextBlock | ImageBlock))
    raise TypeError(
        f"got {type(content).__name__}: a tool (and setup) returns a str, a TextBlock or ImageBlock, a list of "
        "these, or a ToolResult; make other values text with str(...) or json.dumps(...)"
    )


def blocks_text(blocks: Sequence[Block]) -> str:
    return "\n".join(block.text for block in blocks if isinstance(block, TextBlock))
