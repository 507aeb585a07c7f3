"""TextArena's single-player games as multi-turn text environments.

A TextArena game reads the player's move from free text (``[5]``, ``[up]``, ``[A1 B2]``: its prompt
says which), so each game becomes one tool, ``act(action)``. The text goes through the game's
registered wrappers, so TextArena's own action formatting applies (it brackets a move that has no
brackets); what comes back is what the game said since the last move, read from the game itself,
since TextArena's observation wrappers repeat the whole transcript at every turn. The reward is
TextArena's (given when the game ends); the end of the game is ``done``, and an end forced by the
game's turn limit (TextArena's ``check_turn_limit``) is reported as truncation. TextArena's step
info is not passed on, nor anything else the game keeps (the secret number, word or deck).

TextArena draws from Python's global ``random`` (seeded at every reset); each episode here draws
from its own saved copy of it instead, so a seed fixes the whole game, chance during play
included, and the host's own ``random`` is left alone.

Only the default id of each game is listed: its ``-train`` and ``-raw`` ids are the same game
behind other observation wrappers, which the catalog does not use. Multi-player games, and games
that reach the network (NLTK downloads, LLM-played opponents), are left out with the reason.

textarena is imported only when one of these environments starts (``pip install 'omnienv[textarena]'``).
"""

from __future__ import annotations

import importlib
import random
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from omnienv.catalog._foreign import DEFAULT_SPLITS, ForeignEnvironment, foreign_reward, make_class
from omnienv.catalog.manifest import CatalogEntry
from omnienv.core import Task, ToolCall, ToolResult, tool

__all__ = ["TextArenaEnvironment", "candidates", "environment", "probe", "skipped", "version"]

SOURCE = "textarena"
VARIANT = re.compile(r"^(?P<base>.+)-(?:train|raw)$")
"""The ids ``register_with_versions`` adds beside a game's default one (other observation wrappers)."""
DEFAULT_LIMIT = 1000
"""The contract's turn limit where the registration sets no TextArena turn limit (the game ends by
its own rules: 2048 when the board fills, Blackjack after its hands)."""
PLAYER_ACTION = "PLAYER_ACTION"
"""The observation type under which TextArena echoes the player's own move (not shown back)."""
_RANDOM = threading.Lock()
"""Held while a game runs on its own copy of the global ``random``."""


class TextArenaEnvironment(ForeignEnvironment):
    """A TextArena single-player game: the model's move as text in, the game's messages out."""

    extras = ("textarena",)

    text_actions: ClassVar[Mapping[str, str | None]] = {"act": "action"}
    _game: Any = None
    _core: Any = None
    _random: Any = None
    _turn_limit_hit: bool = False

    @contextmanager
    def _own_random(self) -> Iterator[None]:
        """Run TextArena on this episode's copy of the global ``random``, restoring the host's after."""
        with _RANDOM:
            host = random.getstate()
            random.setstate(self._random)
            try:
                yield
            finally:
                self._random = random.getstate()
                random.setstate(host)

    def _messages(self) -> str:
        """What the game said since the player's last move, as plain text."""
        _, messages = self._core.get_observation()
        said = [str(text).strip() for _, text, kind in messages if getattr(kind, "name", "") != PLAYER_ACTION]
        return "\n\n".join(text for text in said if text)

    def _watch_turn_limit(self) -> None:
        """Note when the game's own turn-limit check fires (it ends the game in the same move), to
        report that ending as truncation."""
        state = self._core.state
        check = state.check_turn_limit

        def watched() -> bool:
            reached = bool(check())
            self._turn_limit_hit = self._turn_limit_hit or reached
            return reached

        state.check_turn_limit = watched

    def setup(self, task: Task | None, rng: random.Random) -> str:
        seed = self.seed_of(task, rng)
        self._random = random.Random(seed).getstate()
        with self._own_random():
            if self._game is None:
                textarena = importlib.import_module("textarena")
                self._game = self._core = textarena.make(self.entry.target)
                while isinstance(self._core, textarena.Wrapper):  # the game itself keeps the messages
                    self._core = self._core.env
            self._game.reset(num_players=1, seed=seed)
            self._watch_turn_limit()
            return self._messages() or self.entry.description

    @tool
    def act(self, action: str) -> ToolResult:
        """Make your move as text, in the format the game asks for: the part in square brackets is the
        move, e.g. [5] or [up] (a move without brackets is bracketed whole).

        Args:
            action: Your move, as the game's instructions ask for it.
        """
        self._turn_limit_hit = False
        with self._own_random():
            over, _ = self._game.step(action)  # TextArena's step info is not passed on
            said = self._messages()
            if not over:
                return ToolResult.of(said or "(the game said nothing)")
            rewards, game_info = self._game.close()
        # a few 0.7.4 games pass set_invalid_move its arguments the wrong way round: no number
        reward = foreign_reward((rewards or {}).get(0, 0.0), "TextArena's game")
        reason = str(game_info.get(0, {}).get("reason") or "").strip()
        if reason and reason[-1] not in ".!?":
            reason += "."
        ending = f"The game is over{': ' + reason if reason else '.'} Your reward: {reward:g}."
        if self._turn_limit_hit:
            self.truncate()
        text = f"{said}\n\n{ending}" if said else ending
        return ToolResult.of(text, reward=reward, done=not self._turn_limit_hit)

    def teardown(self) -> None:
        self._game = self._core = None


def environment(entry: CatalogEntry) -> type[ForeignEnvironment]:
    return make_class(TextArenaEnvironment, entry)


# -- the manifest (scripts/catalog_manifest.py) ---------------------------------------------------


def version() -> str:
    from importlib.metadata import version as installed

    return installed("textarena")


def _registry() -> dict[str, Any]:
    registration = importlib.import_module("textarena.envs.registration")
    registry: dict[str, Any] = registration.ENV_REGISTRY
    return registry


def _module_source(entry_point: str) -> str | None:
    """The source of a game's module, read from the package without importing it (some TextArena
    modules download NLTK corpora when imported); None when the module is not in the package."""
    module = entry_point.split(":")[0].split(".")
    root = Path(importlib.import_module("textarena").__file__ or "").parent
    path = root.joinpath(*module[1:]).with_suffix(".py")
    return path.read_text() if path.is_file() else None


def _states(source: str) -> set[str]:
    """The TextArena state classes a game's module builds (``SinglePlayerState``, ``TwoPlayerState``...)."""
    return set(re.findall(r"\b(\w*State)\(", source)) & {"State", *_state_classes()}


def _state_classes() -> set[str]:
    state = importlib.import_module("textarena.state")
    return {name for name in dir(state) if name.endswith("State")}


def _variant_of(game_id: str, registry: dict[str, Any]) -> str | None:
    """The default id that ``game_id`` is a wrapper variant of, if it is one."""
    match = VARIANT.match(game_id)
    if match is None or match["base"] not in registry:
        return None
    base, spec = registry[match["base"]], registry[game_id]
    return str(match["base"]) if (base.entry_point, base.kwargs) == (spec.entry_point, spec.kwargs) else None


def _sorted_out(game_id: str, registry: dict[str, Any]) -> str | None:
    """Why ``game_id`` is not a candidate (None when it is one)."""
    entry_point = registry[game_id].entry_point
    if isinstance(entry_point, str):
        source = _module_source(entry_point)
        if source is None:
            return f"its module ({entry_point.split(':')[0]}) is not in the package"
        states = _states(source)
        if not states or not states <= {"SinglePlayerState", "State"}:
            return f"not a single-player game (its module builds {', '.join(sorted(states)) or 'no TextArena state'})"
    base = _variant_of(game_id, registry)
    if base is not None:
        return f"the same game as '{base}' behind other observation wrappers (the catalog renders the game's messages)"
    return None


def _describe(game_id: str, kwargs: Mapping[str, Any]) -> tuple[str, int]:
    game, _, level = game_id.partition("-v0")
    level = level.lstrip("-") or "default"
    limit = kwargs.get("max_turns")
    # an invalid move gets one retry that does not count as a turn, and the limit ends the game on
    # the move after it: the contract's limit leaves room for both, so TextArena's limit comes first
    return f"TextArena's {game} game ({level}).", 2 * int(limit) + 2 if limit else DEFAULT_LIMIT


def candidates() -> list[CatalogEntry]:
    """Every single-player game's default id, described from the registry without making one."""
    registry = _registry()
    found = []
    for game_id, spec in registry.items():
        if _sorted_out(game_id, registry) is not None:
            continue
        description, limit = _describe(game_id, spec.kwargs)
        # name, source, target, kind, description, tools, splits, offline, max_turns
        row = (f"{SOURCE}/{game_id}", SOURCE, game_id, "multi-turn", description, ("act",))
        found.append(CatalogEntry(*row, dict(DEFAULT_SPLITS), True, limit))
    return found


def skipped() -> dict[str, str]:
    """The registered ids that are not candidates, and why."""
    registry = _registry()
    reasons = {game_id: _sorted_out(game_id, registry) for game_id in registry}
    return {game_id: reason for game_id, reason in reasons.items() if reason is not None}


LOOPBACK = {"localhost", "127.0.0.1", "::1"}


@contextmanager
def offline() -> Iterator[list[str]]:
    """Refuse every host lookup and connection but this machine's, and list the hosts tried.

    Probing runs each game with this on, so a game that downloads anything (NLTK's corpora, which
    several TextArena modules fetch when imported) or asks an online model is found and left out,
    even where the game catches the error and carries on.
    """
    reached: list[str] = []
    lookup, connect = socket.getaddrinfo, socket.socket.connect

    def refused(host: object) -> OSError:
        reached.append(str(host))
        return ConnectionRefusedError(f"offline probe: no network for {host}")

    def guarded_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and str(host) not in LOOPBACK:
            raise refused(host)
        return lookup(host, *args, **kwargs)

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and str(address[0]) not in LOOPBACK:
            raise refused(address[0])
        connect(sock, address)

    socket.getaddrinfo, socket.socket.connect = guarded_lookup, guarded_connect  # type: ignore[assignment,method-assign]
    try:
        yield reached
    finally:
        socket.getaddrinfo, socket.socket.connect = lookup, connect  # type: ignore[method-assign]


class NeedsNetwork(ConnectionRefusedError):
    """The game tried to reach another machine while it was probed offline."""


PROBE_EPISODES = (("[1]",), ("?", "?"))
"""A move; then nonsense, which TextArena warns about once and then ends the game on, with a loss."""
_reached_at_import: dict[str, list[str]] = {}
"""The hosts each game module tried to reach when first imported (Python imports a module once)."""


def probe(entry: CatalogEntry) -> None:
    """Import the game's module, play one move, then play a game of nonsense (TextArena ends it on
    the second invalid move), all with the network cut off; raises when the game can't, or when it
    tried to reach any host but this one."""
    module = str(_registry()[entry.target].entry_point).split(":")[0]
    if module not in _reached_at_import:
        with offline() as reached:
            try:
                importlib.import_module(module)
            finally:
                _reached_at_import[module] = reached
    if _reached_at_import[module]:
        raise NeedsNetwork(f"needs the network: its module reaches {_reached_at_import[module][0]} when imported")
    env = environment(entry)()
    failure = None
    with offline() as reached:
        try:
            for moves in PROBE_EPISODES:
                env.reset(seed=0)
                for move in moves:
                    result = env.step(ToolCall("act", {"action": move}))
                    failure = failure or result.failure
                    if result.over:
                        break
        except Exception:
            if not reached:
                raise
        finally:
            env.close()
    if reached:
        raise NeedsNetwork(f"needs the network: it reaches {reached[0]} when it starts or plays")
    if failure is not None:
        raise RuntimeError(failure.message)
