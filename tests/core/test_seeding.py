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


def test_a_seed_picks_its_task_by_a_fixed_mix_spread_evenly_and_apart_from_setups_draws() -> None:
    """The task a seed draws is pinned here: changing the mix would change every seeded episode."""
    from omnienv.core import Task, TaskIndex
    from omnienv.core.tasks import seed_index

    # the first output of SplitMix64 seeded with 0, and with 1, as its reference implementation gives
    assert [seed_index(seed, 2**64) for seed in (0, 1)] == [0xE220A8397B1DCDAF, 0x910A2DEC89025CC1]
    counts = [0] * 10
    for seed in range(10_000):
        counts[seed_index(seed, 10)] += 1
    assert min(counts) > 900 and max(counts) < 1100
    wide = {seed_index(seed, 2**64) for seed in (-1, -2, 2**64, 2**64 + 1, 2**200)}
    assert len(wide) == 5 and seed_index(-1, 7) == seed_index(-1, 7)
    with pytest.raises(ValueError, match="no task"):
        seed_index(3, 0)
    with pytest.raises(TypeError):
        seed_index(1.5, 10)  # type: ignore[arg-type]

    index = TaskIndex("ten", ("train",), lambda split: [Task(f"{split}/{i}", split) for i in range(10)])
    assert [index.draw(seed) for seed in range(20)] == [index.split("train")[seed_index(s, 10)] for s in range(20)]
    # the task and setup's first draw are not one number: over many seeds they disagree as often as chance says
    same = sum(seed_index(seed, 10) == random.Random(seed).randrange(10) for seed in range(2000))
    assert 100 < same < 300
