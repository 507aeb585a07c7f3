"""GEM's offline environments (its games, and its reasoning-gym tasks) as text environments.

GEM environments take the model's text as the action (``\\boxed{...}`` moves, answers) and answer
with text, so each becomes one tool, ``act(action)``, whose text goes to ``env.step`` unchanged.
The reward is GEM's; ``terminated`` ends the episode and GEM's own turn budget is reported as
truncation. A task is a reset seed. GEM's ``info`` is not passed on: some of its environments put
the answer there. Environments that need a download (datasets, NLTK corpora, search) are left out
of the manifest, each with the reason its probe failed.

gem-llm is imported only when one of these environments starts (``pip install 'omnienv[gem]'``).
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping
from typing import Any, ClassVar

from omnienv.catalog._foreign import DEFAULT_SPLITS, ForeignEnvironment, foreign_reward, make_class
from omnienv.catalog.manifest import CatalogEntry
from omnienv.core import Task, ToolCall, ToolResult, tool

__all__ = ["GemEnvironment", "candidates", "environment", "probe", "version"]

SOURCE = "gem"
OFFLINE_PREFIXES = ("game:", "rg:")
"""GEM id namespaces whose environments generate their episodes locally; the others (math:, code:,
qa:, logic:, eval:) read datasets from the Hugging Face Hub."""
DEFAULT_LIMIT = 100
"""The contract's turn limit where GEM sizes the game at reset (its ``-random`` variants)."""


class GemEnvironment(ForeignEnvironment):
    """A GEM environment: the model's text in, GEM's text out."""

    extras = ("gem",)

    text_actions: ClassVar[Mapping[str, str | None]] = {"act": "action"}
    _gem: Any = None

    def setup(self, task: Task | None, rng: random.Random) -> str:
        if self._gem is None:
            gem = importlib.import_module("gem")
            self._gem = gem.make(self.entry.target)
        prompt, _ = self._gem.reset(seed=self.seed_of(task, rng))
        return str(prompt)

    @tool
    def act(self, action: str) -> ToolResult:
        """Make your move (or give your answer) as text, in the format the game asks for, e.g. \\boxed{3}.

        Args:
            action: Your move or answer, as the instructions ask for it.
        """
        observation, reward, terminated, truncated, _ = self._gem.step(action)
        if truncated and not terminated:
            self.truncate()
        return ToolResult.of(str(observation), reward=foreign_reward(reward, "GEM's step"), done=bool(terminated))

    def teardown(self) -> None:
        if self._gem is not None:
            close = getattr(self._gem, "close", None)
            if callable(close):
                close()
            self._gem = None


def environment(entry: CatalogEntry) -> type[ForeignEnvironment]:
    return make_class(GemEnvironment, entry)


# -- the manifest (scripts/catalog_manifest.py) ---------------------------------------------------


def version() -> str:
    from importlib.metadata import version as installed

    return installed("gem-llm")


def _describe(gem_id: str, kwargs: dict[str, Any]) -> tuple[str, str, int]:
    namespace, _, rest = gem_id.partition(":")
    if namespace == "rg":
        return "single-turn", f"reasoning-gym's {rest} task, served by GEM.", 1
    game, _, level = rest.partition("-v0")
    level = level.lstrip("-") or "default"
    limit = kwargs.get("max_turns") or DEFAULT_LIMIT
    return "multi-turn", f"GEM's {game} game ({level}).", int(limit)


def candidates() -> list[CatalogEntry]:
    """Every GEM id of the offline namespaces, described from the registry without making one."""
    registration = importlib.import_module("gem.envs.registration")
    found = []
    for gem_id, spec in registration.ENV_REGISTRY.items():
        if not gem_id.startswith(OFFLINE_PREFIXES):
            continue
        kind, description, limit = _describe(gem_id, dict(spec.kwargs))
        found.append(
            CatalogEntry(
                name=f"{SOURCE}/{gem_id}",
                source=SOURCE,
                target=gem_id,
                kind=kind,
                description=description,
                tools=("act",),
                splits=dict(DEFAULT_SPLITS),
                offline=True,
                max_turns=limit,
            )
        )
    return found


def skipped() -> dict[str, str]:
    """The GEM ids of the namespaces that need a download, and why they are not in the catalog."""
    registration = importlib.import_module("gem.envs.registration")
    return {
        gem_id: "reads its data from the Hugging Face Hub (needs the network)"
        for gem_id in registration.ENV_REGISTRY
        if not gem_id.startswith(OFFLINE_PREFIXES)
    }


def probe(entry: CatalogEntry) -> None:
    """Reset once and take one step, offline; raises when the environment can't."""
    env = environment(entry)()
    try:
        env.reset(seed=0)
        result = env.step(ToolCall("act", {"action": "\\boxed{1}"}))
        if result.failure is not None:
            raise RuntimeError(result.failure.message)
    finally:
        env.close()
