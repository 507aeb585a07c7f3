"""Every Jupyter task: well posed, answerable from its files alone, and leaking nothing.

The kernel test plays every family through a real sandboxed kernel: one whole oracle episode per
family (the prompt, the reference solution as a cell, the final answer, the score), then, in that
same kernel, the family's other variants, each in a folder holding exactly the files its reset
writes. So one kernel per family checks every task.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnienv.core import Task
from omnienv.envs.jupyter import Jupyter, answers_match, build, jupyter_tasks
from omnienv.envs.jupyter import tasks as tasks_module
from omnienv.envs.jupyter.families import algorithms
from omnienv.envs.jupyter.families.common import decimals
from omnienv.envs.jupyter.player import JupyterOracle, task_for_prompt
from omnienv.envs.jupyter.solutions import SOLUTIONS, solution
from omnienv.envs.jupyter.tasks import FAMILIES, VARIANTS
from omnienv.rollout import EpisodePlan
from omnienv.rollout.loop import arun_episode
from omnienv.sandboxes.jupyter import KernelPool

ALL_TASKS = (*jupyter_tasks("train"), *jupyter_tasks("test"))
_ANSWER = re.compile(r"\[(variant\d)\] ANSWER: (.*)")
BATCH = """
import contextlib, io, os, traceback
def _solve(folder, source):
    out = io.StringIO()
    os.makedirs(folder, exist_ok=True)  # tasks without files have no folder yet
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out):
            exec(source, {"__name__": "__main__"})  # a namespace of its own, like a fresh kernel's
    except Exception:
        out.write("ERROR " + traceback.format_exc(limit=-2))
    finally:
        os.chdir("..")
    return out.getvalue().strip().splitlines()
for _folder, _source in JOBS:
    _lines = _solve(_folder, _source)
    print(f"[{_folder}]", _lines[-1] if _lines else "(nothing printed)")
    if _lines and not _lines[-1].startswith("ANSWER: "):
        print("\\n".join(_lines[-12:]))
"""


@pytest.fixture(scope="module")
def pool() -> Iterator[KernelPool]:
    pool = KernelPool(2)
    try:
        yield pool
    finally:
        pool.close()


def digits(task: Task) -> int:
    """How many decimals a float task asks for, from its tolerance of half a unit in that place."""
    return round(-math.log10(2 * (float(task.data["tolerance"]) - 1e-9)))


def answer_forms(task: Task) -> set[str]:
    """The answer as an agent could find it written: every form three or more characters long.

    Shorter answers ("7") occur by chance in any question (a threshold, an example), so they
    prove nothing either way.
    """
    answer = task.answer
    forms = {str(answer).casefold()}
    if isinstance(answer, float):
        forms |= {f"{answer:.{digits(task)}f}", str(round(answer, digits(task)))}
    return {form for form in forms if len(form) >= 3}


def printed_is_exact(printed: str, task: Task) -> bool:
    """The printed answer is the generator's: the same integer or text, the same rounded float."""
    if isinstance(task.answer, float):
        return float(printed) == round(task.answer, digits(task))
    return printed == str(task.answer)


# -- the task list -----------------------------------------------------------------------------


def test_the_task_list_is_large_split_by_variant_and_mostly_data_analysis() -> None:
    train, test = jupyter_tasks("train"), jupyter_tasks("test")
    assert len(FAMILIES) >= 40 and len(train) + len(test) == 5 * len(FAMILIES) >= 200
    assert len(train) == 3 * len(FAMILIES) and len(test) == 2 * len(FAMILIES)
    assert len({task.id for task in ALL_TASKS}) == len(ALL_TASKS)
    assert {t.data["family"] for t in train} == {t.data["family"] for t in test} == set(FAMILIES)
    analysis = [name for name in FAMILIES if build(name, 0).files and FAMILIES[name] not in algorithms.FAMILIES]
    assert len(analysis) >= 0.75 * len(FAMILIES), analysis
    assert set(SOLUTIONS) == set(FAMILIES)
    kinds = {name.rsplit(".", 1)[-1] for t in ALL_TASKS for name in t.data["files"]}
    assert {"csv", "tsv", "json", "jsonl", "log", "txt"} <= kinds
    readme = (Path(__file__).parents[2] / "README.md").read_text()  # the counts the docs state hold
    counts = f"{len(ALL_TASKS)} tasks from {len(FAMILIES)} seeded families ({len(train)} train / {len(test)} test"
    assert counts in readme
    assert f"{len(FAMILIES)} families x 5 variants ({len(ALL_TASKS)} tasks)" in str(tasks_module.__doc__)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_rebuilds_the_same_small_well_stated_tasks(name: str) -> None:
    for variant in (*VARIANTS["train"], *VARIANTS["test"]):
        built = build(name, variant)
        assert FAMILIES[name](random.Random(f"omnienv-jupyter:{name}:{variant}")) == built  # same at every reset
        assert sum(len(data) for data in built.files.values()) < 1 << 20
        assert all(file in built.question for file in built.files), "the question names each file it uses"
        assert isinstance(built.answer, int | float | str) and built.answer != ""
        if isinstance(built.answer, float):
            stated = re.search(r"Round to (\d) decimal places?", built.question)  # the tolerance is what it says
            assert stated is not None and built.tolerance == decimals(int(stated[1])), built.question
        else:
            assert built.tolerance == 0.0
        json.dumps(built.params)  # the parameters travel in Task.data


def test_no_answer_ships_with_a_task_or_names_its_files() -> None:
    for task in ALL_TASKS:
        shipped = json.dumps(task.to_dict()).casefold()
        assert "answer" not in task.to_dict()
        for form in answer_forms(task):
            assert form.casefold() not in shipped, (task.id, form)
            assert not any(form.casefold() in name.casefold() for name in task.data["files"]), (task.id, form)


def test_near_misses_of_every_answer_score_zero() -> None:
    for task in ALL_TASKS:
        answer, tolerance = task.answer, float(task.data["tolerance"])
        assert answers_match(str(answer), answer, tolerance), task.id
        if isinstance(answer, str):
            misses = [answer + "x", answer[:-1], "", "0"]
            if ", " in answer:
                misses.append(", ".join(reversed(answer.split(", "))))
        elif isinstance(answer, float):
            rounded = round(answer, digits(task))
            misses = [str(rounded + 2 * 10 ** -digits(task)), str(rounded - 2 * 10 ** -digits(task)), str(-answer - 1)]
        else:
            misses = [str(answer + 1), str(answer - 1), f"{answer} or {answer + 1}"]
        for miss in misses:
            assert not answers_match(miss, answer, tolerance), (task.id, miss)


def test_the_oracle_tells_tasks_apart_by_their_prompt() -> None:
    for task in ALL_TASKS:
        found = task_for_prompt(f"...\n{task.data['question']}\nFiles: ...")
        assert (found.data["family"], found.data["params"]) == (task.data["family"], task.data["params"]), task.id
    with pytest.raises(ValueError, match="none of the Jupyter"):
        task_for_prompt("What is 6 x 7?")


# -- every task in a real kernel ---------------------------------------------------------------


async def play_family(env: Jupyter, name: str, first: int) -> list[str]:
    """Problems found: one oracle episode on variant ``first``, then the other variants in its kernel."""
    problems: list[str] = []
    tasks = {task.data["variant"]: task for task in ALL_TASKS if task.data["family"] == name}
    task = tasks[first]
    episode = await arun_episode(env, JupyterOracle(), EpisodePlan(0, task.id, None))
    assert episode.prompt is not None
    last = episode.steps[-1] if episode.steps else None
    if episode.failure is not None or last is None or last.call.name != "final_answer":
        return [f"{task.id}: the episode did not end with an answer: {episode.failure}"]
    if last.result.info["rubric"]["correct"] != 1.0 or not printed_is_exact(last.call.arguments["answer"], task):
        problems.append(f"{task.id}: answered {last.call.arguments['answer']!r}, expected {task.answer!r}")
    state = json.dumps((await env.state()).fields)
    shown = [episode.prompt.text, state, *(json.dumps(step.result.info) for step in episode.steps)]
    problems += [f"{task.id}: {form!r} leaked" for form in answer_forms(task) for text in shown if form in text]

    sandbox = env.sandbox
    assert sandbox is not None  # the episode is over, its kernel stays until the next reset
    others = [task for variant, task in sorted(tasks.items()) if variant != first]
    for other in others:
        for file, data in build(name, other.data["variant"]).files.items():
            await sandbox.write_file(f"variant{other.data['variant']}/{file}", data)
    sources = {f"variant{t.data['variant']}": solution(name, t.data["params"]) for t in others}
    if SOLUTIONS[name].kind == "code":
        jobs = [(folder, source) for folder, (_, source) in sources.items()]
        outputs = [await sandbox.run_code(f"JOBS = {jobs!r}\n{BATCH}", 60)]
    else:
        commands = [f"echo [{folder}] $(cd {folder}\n{source})" for folder, (_, source) in sources.items()]
        outputs = [await sandbox.run_shell(command, 30) for command in commands]
    printed = dict(_ANSWER.findall("\n".join(output.stdout for output in outputs)))
    for other in others:
        given = printed.get(f"variant{other.data['variant']}")
        if given is None or not printed_is_exact(given, other):
            detail = "\n".join(f"{o.stdout}{o.stderr}{o.error}" for o in outputs)
            problems.append(f"{other.id}: printed {given!r}, expected {other.answer!r}\n{detail[-2000:]}")
    return problems


def test_every_task_is_solved_from_its_files_in_a_real_kernel(pool: KernelPool) -> None:
    names = sorted(FAMILIES)

    async def worker(share: list[str]) -> list[str]:
        env = Jupyter(pool=pool)
        try:
            problems = []
            for name in share:
                problems += await play_family(env, name, names.index(name) % 5)  # every variant gets episodes
            return problems
        finally:
            await env.close()

    async def go() -> list[str]:
        found = await asyncio.gather(worker(names[0::2]), worker(names[1::2]))
        return [problem for problems in found for problem in problems]

    problems = asyncio.run(go())
    assert problems == [], "\n".join(problems)
    assert Jupyter.policies == {"oracle": "omnienv.envs.jupyter.player:JupyterOracle"}
