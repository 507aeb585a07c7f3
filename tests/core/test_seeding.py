"""setup's generator is seeded at its first draw, and draws exactly what random.Random(seed) draws."""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Callable
from typing import Any

import pytest

from omnienv.core.seeding import seeded

DRAWS: dict[str, Callable[[random.Random], Any]] = {
    "random": lambda r: [r.random() for _ in range(3)],
    "choice": lambda r: [r.choice(range(1000)) for _ in range(5)],
    "shuffle": lambda r: (items := list(range(20)), r.shuffle(items), items)[2],
    "sample": lambda r: r.sample(range(100), 7),
    "randint": lambda r: r.randint(1, 10**12),
    "gauss": lambda r: [r.gauss() for _ in range(3)],
    "randbytes": lambda r: r.randbytes(9),
    "getrandbits": lambda r: r.getrandbits(200),
    "choices": lambda r: r.choices("abcdef", k=6),
    "getstate": lambda r: r.getstate(),
}


@pytest.mark.parametrize("draw", DRAWS)
@pytest.mark.parametrize("seed", [0, 7, 2**40])
def test_a_lazily_seeded_generator_draws_what_a_seeded_one_does(draw: str, seed: int) -> None:
    lazy = seeded(seed)
    assert DRAWS[draw](lazy) == DRAWS[draw](random.Random(seed))
    assert type(lazy) is random.Random  # after its first draw it is a plain generator
    assert lazy.random() == (plain := random.Random(seed), DRAWS[draw](plain), plain.random())[2]


def test_copies_pickles_and_reseeding_before_the_first_draw() -> None:
    assert pickle.loads(pickle.dumps(seeded(3))).random() == random.Random(3).random()
    assert copy.deepcopy(seeded(3)).random() == random.Random(3).random()
    reseeded = seeded(3)
    reseeded.seed(9)
    assert reseeded.random() == random.Random(9).random()
    restored = seeded(3)
    restored.setstate(random.Random(5).getstate())
    assert restored.random() == random.Random(5).random()


def test_an_unseeded_generator_still_draws_fresh_numbers() -> None:
    assert seeded(None).getrandbits(128) != seeded(None).getrandbits(128)


def test_unseeded_task_draws_vary_and_differ_in_a_forked_worker() -> None:
    """``seed=None`` draws from one generator per process: forked server workers must not draw
    the same tasks in the same order."""
    import os

    from omnienv.core import Task, TaskIndex

    index = TaskIndex("many", ("train",), lambda split: [Task(f"{split}/{i}", split) for i in range(10_000)])

    def draws() -> list[str]:
        return [task.id for task in (index.draw(None) for _ in range(8)) if task is not None]

    assert draws() != draws()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its draws and leave without running pytest's exit handlers
        try:
            os.write(writer, " ".join(draws()).encode())
        finally:
            os._exit(0)
    os.close(writer)
    parent = draws()
    with os.fdopen(reader) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    assert len(child) == 8 and child != parent
    assert index.draw(5) == index.draw(5)  # a seed still names one task
