"""Read the generated environment classes with TRL's own machinery; print one JSON report.

Runs in TRL's virtualenv: transformers' ``get_json_schema`` (what GRPOTrainer uses) must read every
tool method, and its schema must agree with the environment's own; ``dataset`` must build rows
that TRL's ``reset(**row)`` accepts.
"""

from __future__ import annotations

import inspect
import json
from enum import Enum
from typing import Literal

from pydantic import BaseModel
from transformers.utils import get_json_schema

from omnienv.core import Environment, EnvironmentBase, tool
from omnienv.dialects.trl import dataset, environment_factory
from omnienv.envs.wordle import Wordle


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int


class Shapes(Environment):
    """Tools with every kind of argument an author may write."""

    @tool
    def draw(
        self,
        colour: Colour,
        mode: Literal["a", "b"],
        tags: list[str],
        size: float = 1.0,
        where: dict[str, int] | None = None,
        at: Point | None = None,
        count: int = 1,
        fill: bool = False,
    ) -> str:
        """Draw a shape.

        The long description goes on.

        Args:
            colour: A colour.
            mode: A mode.
            tags: Some tags,
                over two lines.
            size: The size.
            where: A mapping.
            at: A point, not a hint TRL reads.
            count: How many.
            fill: Whether to fill.
        """
        return "ok"

    @tool
    def clear(self) -> str:
        """Clear the canvas."""
        return "ok"


def trl_tools(cls: type) -> list[str]:
    return [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def _flat(value: object) -> object:
    """Descriptions as one line, as TRL's docstring reader gives them."""
    return " ".join(value.split()) if isinstance(value, str) else value


def compare(env_class: type[EnvironmentBase]) -> dict[str, object]:
    cls = environment_factory(env_class)
    report: dict[str, object] = {
        "tools": trl_tools(cls),
        "mismatches": [],
        "schemas": {n: get_json_schema(getattr(cls, n)) for n in trl_tools(cls)},
    }
    for name in report["tools"]:  # type: ignore[union-attr]
        schema = get_json_schema(getattr(cls, name))["function"]
        ours = env_class.tools[name].parameters
        theirs = schema["parameters"]
        if schema["description"] != env_class.tools[name].description:
            report["mismatches"].append([name, "description", schema["description"]])  # type: ignore[union-attr]
        if sorted(theirs.get("required", [])) != sorted(ours.get("required", [])):
            report["mismatches"].append([name, "required", theirs.get("required")])  # type: ignore[union-attr]
        for arg, prop in ours.get("properties", {}).items():
            got = theirs["properties"].get(arg, {})
            for key in ("type", "description", "enum"):
                if key in prop and _flat(got.get(key)) != _flat(prop[key]):
                    report["mismatches"].append([name, arg, key, got.get(key), prop[key]])  # type: ignore[union-attr]
    return report


def main() -> None:
    out: dict[str, object] = {"wordle": compare(Wordle), "shapes": compare(Shapes)}
    rows = dataset("wordle", "test", limit=3)
    env = environment_factory("wordle")()
    out["dataset"] = {"columns": rows.column_names, "rows": rows.to_list(), "prompt": env.reset(**rows[0])}
    print("REPORT " + json.dumps(out))


if __name__ == "__main__":
    main()
