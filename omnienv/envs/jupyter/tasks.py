"""The Jupyter tasks: 16 families x 5 variants, each with data files made from its seed.

A family is a function of a seeded ``random.Random`` that returns the question, the files the
episode starts with, and the exact answer, computed here in plain Python. Files are rebuilt at
every reset from the same seed, so the task list stays small and every episode starts clean.
Variants 0-2 form the ``train`` split, 3-4 the ``test`` split.
"""

from __future__ import annotations

import csv
import heapq
import io
import json
import math
import random
from bisect import bisect_left
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from omnienv.core import Task

__all__ = ["FAMILIES", "Built", "build", "jupyter_tasks"]

VARIANTS = {"train": (0, 1, 2), "test": (3, 4)}


@dataclass(frozen=True, slots=True)
class Built:
    """Everything about one task: what the agent is asked, its files, and the answer."""

    question: str
    answer: int | float | str
    tolerance: float = 0.0
    files: dict[str, bytes] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


def _csv(header: list[str], rows: list[list[Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def _decimals(digits: int) -> float:
    """Tolerance for an answer asked 'rounded to ``digits`` decimals' (unrounded also passes)."""
    return 0.5 * 10**-digits + 1e-9


REGIONS = ["north", "south", "east", "west"]
PRODUCTS = ["apple", "banana", "cherry", "durian", "elderberry", "fig"]
MONTHS = ["January", "February", "March", "April", "May", "June"]
COMPONENTS = ["auth", "db", "api", "cache", "queue", "billing"]
WORDS = (
    "river stone cloud lantern orchard meadow harbor falcon copper willow ember canyon glacier "
    "thunder pepper violet maple comet velvet marble cedar puzzle rocket garden silver"
).split()


def _sales(rng: random.Random) -> list[list[Any]]:
    prices = {p: round(rng.uniform(0.5, 9.5), 2) for p in PRODUCTS}
    rows = []
    for _ in range(rng.randint(150, 250)):
        product = rng.choice(PRODUCTS)
        date = f"2024-{rng.randint(1, 6):02d}-{rng.randint(1, 28):02d}"
        rows.append([date, rng.choice(REGIONS), product, rng.randint(1, 20), prices[product]])
    rows.sort()
    return rows


SALES_HEADER = ["date", "region", "product", "units", "unit_price"]


def sales_total(rng: random.Random) -> Built:
    rows = _sales(rng)
    region = rng.choice(REGIONS)
    total = sum(units * price for _, r, _, units, price in rows if r == region)
    return Built(
        f"sales.csv lists sales (date, region, product, units, unit_price). What is the total revenue "
        f"(units x unit_price) of the '{region}' region? Round to 2 decimal places.",
        round(total, 2),
        _decimals(2),
        {"sales.csv": _csv(SALES_HEADER, rows)},
        {"region": region},
    )


def sales_top_product(rng: random.Random) -> Built:
    while True:
        rows = _sales(rng)
        month = rng.randint(1, 6)
        units = Counter[str]()
        for date, _, product, n, _ in rows:
            if int(date[5:7]) == month:
                units[product] += n
        (best, top), *rest = units.most_common()
        if not rest or rest[0][1] < top:
            break
    return Built(
        f"sales.csv lists sales (date, region, product, units, unit_price) in 2024. Which product "
        f"sold the most units in {MONTHS[month - 1]} 2024? Answer with the product name.",
        best,
        0.0,
        {"sales.csv": _csv(SALES_HEADER, rows)},
        {"month": month},
    )


def sensor_mean(rng: random.Random) -> Built:
    rows: list[list[Any]] = []
    for minute in range(rng.randint(60, 120)):
        for sensor in ("S1", "S2", "S3", "S4"):
            value = "" if rng.random() < 0.1 else round(rng.gauss(20 + int(sensor[1]), 3), 2)
            rows.append([sensor, minute, value])
    sensor = rng.choice(["S1", "S2", "S3", "S4"])
    values = [v for s, _, v in rows if s == sensor and v != ""]
    return Built(
        f"readings.csv has temperature readings (sensor, minute, temperature); some temperatures are "
        f"missing (empty). What is the mean temperature of sensor {sensor}, ignoring missing readings? "
        f"Round to 3 decimal places.",
        round(sum(values) / len(values), 3),
        _decimals(3),
        {"readings.csv": _csv(["sensor", "minute", "temperature"], rows)},
        {"sensor": sensor},
    )


def grades_pass(rng: random.Random) -> Built:
    rows = [
        [f"student_{i:03d}", rng.randint(20, 100), rng.randint(20, 100), rng.randint(20, 100)]
        for i in range(rng.randint(80, 150))
    ]
    threshold = rng.randint(55, 75)
    count = sum(1 for _, a, b, c in rows if a + b + c >= 3 * threshold)
    return Built(
        f"students.csv has each student's math, physics and chemistry scores. How many students have "
        f"an average score (over the three subjects) of at least {threshold}?",
        count,
        0.0,
        {"students.csv": _csv(["name", "math", "physics", "chemistry"], rows)},
        {"threshold": threshold},
    )


def correlation(rng: random.Random) -> Built:
    slope, noise = rng.uniform(-3, 3), rng.uniform(10, 60)
    xs = [round(rng.uniform(0, 100), 3) for _ in range(200)]
    ys = [round(slope * x + rng.gauss(0, noise), 3) for x in xs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return Built(
        "xy.csv has two columns, x and y. What is the Pearson correlation coefficient of x and y? "
        "Round to 4 decimal places.",
        round(sxy / math.sqrt(sxx * syy), 4),
        _decimals(4),
        {"xy.csv": _csv(["x", "y"], [[x, y] for x, y in zip(xs, ys, strict=True)])},
    )


def log_errors(rng: random.Random) -> Built:
    lines, errors = [], Counter[str]()
    for i in range(rng.randint(300, 500)):
        level = rng.choices(["INFO", "WARN", "ERROR"], [6, 2, 1])[0]
        component = rng.choice(COMPONENTS)
        errors[component] += level == "ERROR"
        stamp = f"2024-03-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        lines.append(f"{stamp} {level} [{component}] request {rng.randint(1000, 9999)} handled")
    component = rng.choice(COMPONENTS)
    return Built(
        f"server.log is an application log; each line reads 'TIMESTAMP LEVEL [component] message'. "
        f"How many ERROR lines come from the '{component}' component?",
        errors[component],
        0.0,
        {"server.log": ("\n".join(lines) + "\n").encode()},
        {"component": component},
    )


def json_orders(rng: random.Random) -> Built:
    customers = rng.sample(["ada", "grace", "alan", "linus", "barbara", "ken", "margaret", "dennis"], 6)
    while True:
        orders, spent = [], Counter[str]()
        for i in range(rng.randint(40, 80)):
            customer = rng.choice(customers)
            items = [
                {"sku": f"SKU-{rng.randint(100, 999)}", "qty": rng.randint(1, 5), "price": round(rng.uniform(1, 50), 2)}
                for _ in range(rng.randint(1, 4))
            ]
            spent[customer] += sum(item["qty"] * item["price"] for item in items)
            orders.append({"id": i + 1, "customer": customer, "items": items})
        (best, top), (_, second) = spent.most_common(2)
        if top - second > 0.01:
            break
    return Built(
        "orders.json is a list of orders, each with a customer and items (sku, qty, price). Which "
        "customer spent the most in total (sum of qty x price)? Answer with the customer's name.",
        best,
        0.0,
        {"orders.json": json.dumps(orders, indent=1).encode()},
    )


def primes_between(rng: random.Random) -> Built:
    low = rng.randint(10_000, 100_000)
    high = low + rng.randint(2_000, 20_000)
    sieve = bytearray([1]) * (high + 1)
    sieve[0] = sieve[1] = 0
    for i in range(2, math.isqrt(high) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, high + 1, i)))
    return Built(
        f"How many prime numbers p satisfy {low} <= p <= {high}?", sum(sieve[low:]), 0.0, {}, {"low": low, "high": high}
    )


def fib_mod(rng: random.Random) -> Built:
    n, m = rng.randint(1_000, 100_000), rng.randint(10**6, 10**9)
    a, b = 0, 1
    for _ in range(n):
        a, b = b, (a + b) % m
    return Built(
        f"With F(0) = 0, F(1) = 1 and F(k) = F(k-1) + F(k-2), what is F({n}) mod {m}?", a, 0.0, {}, {"n": n, "m": m}
    )


def _bfs(grid: list[str]) -> int | None:
    rows, cols = len(grid), len(grid[0])
    dist = {(0, 0): 0}
    todo = deque([(0, 0)])
    while todo:
        r, c = todo.popleft()
        for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] == "." and (nr, nc) not in dist:
                dist[(nr, nc)] = dist[(r, c)] + 1
                todo.append((nr, nc))
    return dist.get((rows - 1, cols - 1))


def grid_path(rng: random.Random) -> Built:
    while True:
        rows, cols = rng.randint(15, 25), rng.randint(15, 25)
        grid = ["".join("#" if rng.random() < 0.28 else "." for _ in range(cols)) for _ in range(rows)]
        grid[0] = "." + grid[0][1:]
        grid[-1] = grid[-1][:-1] + "."
        steps = _bfs(grid)
        if steps is not None:
            break
    return Built(
        "grid.txt is a maze: '.' is open, '#' is a wall. Moving up, down, left or right between open "
        "cells, what is the fewest number of moves from the top-left cell to the bottom-right cell?",
        steps,
        0.0,
        {"grid.txt": ("\n".join(grid) + "\n").encode()},
    )


def graph_distance(rng: random.Random) -> Built:
    n = rng.randint(20, 40)
    order = list(range(n))
    rng.shuffle(order)
    edges = {tuple(sorted((order[i], order[i + 1]))): rng.randint(1, 50) for i in range(n - 1)}
    while len(edges) < 3 * n:
        u, v = rng.sample(range(n), 2)
        edges[(min(u, v), max(u, v))] = rng.randint(1, 50)
    source, target = rng.sample(range(n), 2)
    adjacency: dict[int, list[tuple[int, int]]] = {i: [] for i in range(n)}
    for (u, v), w in edges.items():
        adjacency[u].append((v, w))
        adjacency[v].append((u, w))
    best = {source: 0}
    heap = [(0, source)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > best[u]:
            continue
        for v, w in adjacency[u]:
            if d + w < best.get(v, 1 << 60):
                best[v] = d + w
                heapq.heappush(heap, (d + w, v))
    rows = [[u, v, w] for (u, v), w in sorted(edges.items())]
    return Built(
        f"edges.csv lists the edges of an undirected weighted graph (u, v, weight). What is the length "
        f"of the shortest path from node {source} to node {target}?",
        best[target],
        0.0,
        {"edges.csv": _csv(["u", "v", "weight"], rows)},
        {"source": source, "target": target},
    )


def lis_length(rng: random.Random) -> Built:
    numbers = [rng.randint(0, 10_000) for _ in range(rng.randint(300, 800))]
    tails: list[int] = []
    for x in numbers:
        i = bisect_left(tails, x)
        tails[i : i + 1] = [x]
    return Built(
        "numbers.txt has one integer per line. What is the length of the longest strictly increasing "
        "subsequence (not necessarily contiguous)?",
        len(tails),
        0.0,
        {"numbers.txt": "".join(f"{x}\n" for x in numbers).encode()},
    )


def knapsack(rng: random.Random) -> Built:
    items = [[f"item{i}", rng.randint(1, 30), rng.randint(1, 100)] for i in range(rng.randint(20, 30))]
    capacity = rng.randint(50, 120)
    best = [0] * (capacity + 1)
    for _, weight, value in items:
        for c in range(capacity, weight - 1, -1):
            best[c] = max(best[c], best[c - weight] + value)
    return Built(
        f"items.csv lists items (name, weight, value). Each item can be taken at most once. What is "
        f"the largest total value of items whose total weight is at most {capacity}?",
        best[capacity],
        0.0,
        {"items.csv": _csv(["name", "weight", "value"], items)},
        {"capacity": capacity},
    )


def word_frequency(rng: random.Random) -> Built:
    while True:
        weights = [rng.random() ** 2 for _ in WORDS]
        words = rng.choices(WORDS, weights, k=rng.randint(1500, 2500))
        (best, top), (_, second) = Counter(words).most_common(2)
        if top > second:
            break
    text, line = [], []
    for word in words:
        word = word.capitalize() if rng.random() < 0.1 else word
        line.append(word + rng.choice(["", "", "", ",", "."]))
        if len(line) >= 12:
            text.append(" ".join(line))
            line = []
    text.append(" ".join(line))
    return Built(
        "text.txt holds some text. Which word occurs most often? Compare words ignoring case and the "
        "punctuation marks ',' and '.'. Answer with the word in lower case.",
        best,
        0.0,
        {"text.txt": ("\n".join(text) + "\n").encode()},
    )


def caesar(rng: random.Random) -> Built:
    plain = " ".join(rng.choices(WORDS, k=rng.randint(6, 9)))
    shift = rng.randint(1, 25)
    secret = "".join(chr((ord(ch) - 97 + shift) % 26 + 97) if ch.isalpha() else ch for ch in plain)
    return Built(
        f"secret.txt holds a message in lower case whose letters were each shifted forward by {shift} "
        f"places in the alphabet (a Caesar cipher, wrapping from z to a; spaces unchanged). What is the "
        f"decoded message?",
        plain,
        0.0,
        {"secret.txt": (secret + "\n").encode()},
        {"shift": shift},
    )


def edit_distance(rng: random.Random) -> Built:
    a = "".join(rng.choices("acgt", k=rng.randint(15, 30)))
    b = "".join(rng.choices("acgt", k=rng.randint(15, 30)))
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return Built(
        f"What is the Levenshtein edit distance (insertions, deletions and substitutions each cost 1) "
        f"between the strings '{a}' and '{b}'?",
        previous[-1],
        0.0,
        {},
        {"a": a, "b": b},
    )


def digit_sum_power(rng: random.Random) -> Built:
    base, exponent = rng.randint(2, 99), rng.randint(200, 2000)
    return Built(
        f"What is the sum of the decimal digits of {base}^{exponent}?",
        sum(int(d) for d in str(base**exponent)),
        0.0,
        {},
        {"base": base, "exponent": exponent},
    )


FAMILIES: dict[str, Callable[[random.Random], Built]] = {
    fn.__name__: fn
    for fn in (
        sales_total,
        sales_top_product,
        sensor_mean,
        grades_pass,
        correlation,
        log_errors,
        json_orders,
        primes_between,
        fib_mod,
        grid_path,
        graph_distance,
        lis_length,
        knapsack,
        word_frequency,
        caesar,
        edit_distance,
        digit_sum_power,
    )
}


@cache
def build(family: str, variant: int) -> Built:
    """The task ``family``/``variant``, the same on every machine and every call."""
    return FAMILIES[family](random.Random(f"omnienv-jupyter:{family}:{variant}"))


@cache
def jupyter_tasks(split: str) -> tuple[Task, ...]:
    tasks = []
    for family in FAMILIES:
        for variant in VARIANTS[split]:
            built = build(family, variant)
            data = {
                "family": family,
                "variant": variant,
                "question": built.question,
                "files": sorted(built.files),
                "params": built.params,
                "tolerance": built.tolerance,
            }
            tasks.append(Task(f"{split}/{family}-{variant}", split, data, built.answer))
    return tuple(tasks)
