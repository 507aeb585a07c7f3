"""Coordinates: the model's ``[x, y]`` in pixels, or in a normalised space (Qwen3-VL's 0-1000)."""

from __future__ import annotations

from omnienv.core import ToolError

__all__ = ["Coordinates"]


class Coordinates:
    """Maps the model's ``[x, y]`` to screen pixels, and back for ``cursor_position``."""

    def __init__(self, screen: tuple[int, int], space: tuple[int, int] | None) -> None:
        self.screen = screen
        self.space = space or screen

    def describe(self) -> str:
        if self.space == self.screen:
            return "Coordinates are absolute pixels in [x, y] arrays."
        return f"Coordinates are [x, y] arrays in a {self.space[0]}x{self.space[1]} space that spans the whole screen."

    def to_pixels(self, point: list[int], name: str = "coordinate") -> tuple[int, int]:
        if len(point) != 2:
            raise ToolError(f"{name} must be [x, y] (two integers), got {point}")
        x, y = point
        width, height = self.space
        scaled = self.space != self.screen  # a normalised space includes its end: Qwen emits 1000
        if not (0 <= x <= width - (not scaled) and 0 <= y <= height - (not scaled)):
            closing = "]" if scaled else ")"
            raise ToolError(
                f"{name} {point} is off the screen: x must be in [0, {width}{closing}, y in [0, {height}{closing}"
            )
        if not scaled:
            return x, y
        return (
            min(round(x * self.screen[0] / width), self.screen[0] - 1),
            min(round(y * self.screen[1] / height), self.screen[1] - 1),
        )

    def from_pixels(self, x: int, y: int) -> tuple[int, int]:
        return round(x * self.space[0] / self.screen[0]), round(y * self.space[1] / self.screen[1])
