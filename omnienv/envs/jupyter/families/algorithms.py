"""The algorithmic minority: number theory, search, dynamic programming and string puzzles.

These test that an agent can write a correct algorithm in the kernel rather than analyse data;
a few carry their input in a file (a maze, a graph, a list of numbers), the rest in the question.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_left
from collections import deque

from omnienv.envs.jupyter.families.common import Built, Family, csv_bytes, family, lines_bytes

__all__ = ["FAMILIES"]

WORDS = (
    "river stone cloud lantern orchard meadow harbor falcon copper willow ember canyon glacier "
    "thunder pepper violet maple comet velvet marble cedar puzzle rocket garden silver"
).split()


@family("""
import numpy as np
sieve = np.ones(high + 1, dtype=bool)
sieve[:2] = False
for i in range(2, int(high ** 0.5) + 1):
    if sieve[i]:
        sieve[i * i::i] = False
print("ANSWER:", int(sieve[low:].sum()))
""")
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


@family("""
a, b = 0, 1
for _ in range(n):
    a, b = b, (a + b) % m
print("ANSWER:", a)
""")
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


@family("""
from collections import deque
grid = open("grid.txt").read().split()
goal = (len(grid) - 1, len(grid[0]) - 1)
dist, todo = {(0, 0): 0}, deque([(0, 0)])
while todo:
    r, c = todo.popleft()
    for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
        if 0 <= nr <= goal[0] and 0 <= nc <= goal[1] and grid[nr][nc] == "." and (nr, nc) not in dist:
            dist[nr, nc] = dist[r, c] + 1
            todo.append((nr, nc))
print("ANSWER:", dist[goal])
""")
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


@family("""
import csv, heapq
graph = {}
for row in csv.DictReader(open("edges.csv")):
    u, v, w = int(row["u"]), int(row["v"]), int(row["weight"])
    graph.setdefault(u, []).append((v, w))
    graph.setdefault(v, []).append((u, w))
best, heap = {source: 0}, [(0, source)]
while heap:
    d, u = heapq.heappop(heap)
    if d > best[u]:
        continue
    for v, w in graph[u]:
        if d + w < best.get(v, float("inf")):
            best[v] = d + w
            heapq.heappush(heap, (d + w, v))
print("ANSWER:", best[target])
""")
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
        {"edges.csv": csv_bytes(["u", "v", "weight"], rows)},
        {"source": source, "target": target},
    )


@family("""
from bisect import bisect_left
tails = []
for x in map(int, open("numbers.txt").read().split()):
    i = bisect_left(tails, x)
    tails[i:i + 1] = [x]
print("ANSWER:", len(tails))
""")
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
        {"numbers.txt": lines_bytes(str(x) for x in numbers)},
    )


@family("""
import pandas as pd
best = [0] * (capacity + 1)
for weight, value in pd.read_csv("items.csv")[["weight", "value"]].itertuples(index=False):
    for c in range(capacity, weight - 1, -1):
        best[c] = max(best[c], best[c - weight] + value)
print("ANSWER:", best[capacity])
""")
def knapsack(rng: random.Random) -> Built:
    items = [(f"item{i}", rng.randint(1, 30), rng.randint(1, 100)) for i in range(rng.randint(20, 30))]
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
        {"items.csv": csv_bytes(["name", "weight", "value"], items)},
        {"capacity": capacity},
    )


@family("""
secret = open("secret.txt").read().strip()
print("ANSWER:", "".join(chr((ord(c) - 97 - shift) % 26 + 97) if c.isalpha() else c for c in secret))
""")
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


@family("""
previous = list(range(len(b) + 1))
for i, ca in enumerate(a, 1):
    current = [i]
    for j, cb in enumerate(b, 1):
        current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
    previous = current
print("ANSWER:", previous[-1])
""")
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


@family("""
print("ANSWER:", sum(int(d) for d in str(base ** exponent)))
""")
def digit_sum_power(rng: random.Random) -> Built:
    base, exponent = rng.randint(2, 99), rng.randint(200, 2000)
    return Built(
        f"What is the sum of the decimal digits of {base}^{exponent}?",
        sum(int(d) for d in str(base**exponent)),
        0.0,
        {},
        {"base": base, "exponent": exponent},
    )


FAMILIES: tuple[Family, ...] = (
    primes_between,
    fib_mod,
    grid_path,
    graph_distance,
    lis_length,
    knapsack,
    caesar,
    edit_distance,
    digit_sum_power,
)
