"""Random arguments that fit a tool's JSON Schema, for random policies and contract checks."""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from typing import Any

__all__ = ["sample_arguments"]


def sample_arguments(
    schema: dict[str, Any], rng: random.Random, strings: Sequence[str] | None = None
) -> dict[str, Any]:
    """Values for every required property (and some optional ones); ``strings`` seeds text."""
    required = set(schema.get("required", ()))
    out: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        if name in required or rng.random() < 0.5:
            out[name] = _sample(prop, rng, strings, schema.get("$defs", {}))
    return out


def _sample(prop: dict[str, Any], rng: random.Random, strings: Sequence[str] | None, defs: dict[str, Any]) -> Any:
    if "$ref" in prop:
        return _sample(defs.get(prop["$ref"].rsplit("/", 1)[-1], {}), rng, strings, defs)
    if "enum" in prop:
        return rng.choice(prop["enum"])
    if "const" in prop:
        return prop["const"]
    options = prop.get("anyOf") or prop.get("oneOf")
    if options:
        return _sample(rng.choice([o for o in options if o.get("type") != "null"] or options), rng, strings, defs)
    kind = prop.get("type", "string")
    if kind == "string":
        if strings:
            return rng.choice(strings)
        return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(1, 8)))
    if kind == "integer":
        return rng.randint(int(prop.get("minimum", 0)), int(prop.get("maximum", 100)))
    if kind == "number":
        return rng.uniform(float(prop.get("minimum", 0.0)), float(prop.get("maximum", 1.0)))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        item = prop.get("items", {})
        count = prop.get("minItems", 2)
        return [_sample(item, rng, strings, defs) for _ in range(count)]
    if kind == "object":
        return sample_arguments(prop, rng, strings)
    return None
