"""Reference solutions, one per task family: the code a competent agent would run.

Kept apart from the tasks (and out of ``Task.data``) so nothing that ships with a task hints at
how to solve it. Each solution is one tool call whose output ends with ``ANSWER: <value>``; the
scripted oracle policy plays them through the tools to prove every task is solvable as posed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SOLUTIONS", "solution"]

SOLUTIONS: dict[str, tuple[str, str]] = {
    "sales_total": (
        "code",
        """
import pandas as pd
df = pd.read_csv("sales.csv")
part = df[df.region == {region!r}]
print("ANSWER:", round(float((part.units * part.unit_price).sum()), 2))
""",
    ),
    "sales_top_product": (
        "code",
        """
import pandas as pd
df = pd.read_csv("sales.csv", parse_dates=["date"])
units = df[df.date.dt.month == {month}].groupby("product").units.sum()
print("ANSWER:", units.idxmax())
""",
    ),
    "sensor_mean": (
        "code",
        """
import pandas as pd
df = pd.read_csv("readings.csv")
print("ANSWER:", round(float(df[df.sensor == {sensor!r}].temperature.mean()), 3))
""",
    ),
    "grades_pass": (
        "code",
        """
import pandas as pd
df = pd.read_csv("students.csv")
print("ANSWER:", int((df[["math", "physics", "chemistry"]].mean(axis=1) >= {threshold}).sum()))
""",
    ),
    "correlation": (
        "code",
        """
import numpy as np, pandas as pd
df = pd.read_csv("xy.csv")
print("ANSWER:", round(float(np.corrcoef(df.x, df.y)[0, 1]), 4))
""",
    ),
    "log_errors": ("shell", "echo ANSWER: $(grep -c ' ERROR \\[{component}\\] ' server.log)"),
    "json_orders": (
        "code",
        """
import json
from collections import Counter
spent = Counter()
for order in json.load(open("orders.json")):
    spent[order["customer"]] += sum(i["qty"] * i["price"] for i in order["items"])
print("ANSWER:", spent.most_common(1)[0][0])
""",
    ),
    "primes_between": (
        "code",
        """
import numpy as np
high = {high}
sieve = np.ones(high + 1, dtype=bool)
sieve[:2] = False
for i in range(2, int(high ** 0.5) + 1):
    if sieve[i]:
        sieve[i * i::i] = False
print("ANSWER:", int(sieve[{low}:].sum()))
""",
    ),
    "fib_mod": (
        "code",
        """
a, b = 0, 1
for _ in range({n}):
    a, b = b, (a + b) % {m}
print("ANSWER:", a)
""",
    ),
    "grid_path": (
        "code",
        """
from collections import deque
grid = open("grid.txt").read().split()
goal = (len(grid) - 1, len(grid[0]) - 1)
dist, todo = {{(0, 0): 0}}, deque([(0, 0)])
while todo:
    r, c = todo.popleft()
    for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
        if 0 <= nr <= goal[0] and 0 <= nc <= goal[1] and grid[nr][nc] == "." and (nr, nc) not in dist:
            dist[nr, nc] = dist[r, c] + 1
            todo.append((nr, nc))
print("ANSWER:", dist[goal])
""",
    ),
    "graph_distance": (
        "code",
        """
import csv, heapq
graph = {{}}
for row in csv.DictReader(open("edges.csv")):
    u, v, w = int(row["u"]), int(row["v"]), int(row["weight"])
    graph.setdefault(u, []).append((v, w))
    graph.setdefault(v, []).append((u, w))
best, heap = {{{source}: 0}}, [(0, {source})]
while heap:
    d, u = heapq.heappop(heap)
    if d > best[u]:
        continue
    for v, w in graph[u]:
        if d + w < best.get(v, float("inf")):
            best[v] = d + w
            heapq.heappush(heap, (d + w, v))
print("ANSWER:", best[{target}])
""",
    ),
    "lis_length": (
        "code",
        """
from bisect import bisect_left
tails = []
for x in map(int, open("numbers.txt").read().split()):
    i = bisect_left(tails, x)
    tails[i:i + 1] = [x]
print("ANSWER:", len(tails))
""",
    ),
    "knapsack": (
        "code",
        """
import pandas as pd
best = [0] * ({capacity} + 1)
for weight, value in pd.read_csv("items.csv")[["weight", "value"]].itertuples(index=False):
    for c in range({capacity}, weight - 1, -1):
        best[c] = max(best[c], best[c - weight] + value)
print("ANSWER:", best[{capacity}])
""",
    ),
    "word_frequency": (
        "code",
        """
from collections import Counter
words = open("text.txt").read().lower().replace(",", " ").replace(".", " ").split()
print("ANSWER:", Counter(words).most_common(1)[0][0])
""",
    ),
    "caesar": (
        "code",
        """
secret = open("secret.txt").read().strip()
print("ANSWER:", "".join(chr((ord(c) - 97 - {shift}) % 26 + 97) if c.isalpha() else c for c in secret))
""",
    ),
    "edit_distance": (
        "code",
        """
a, b = {a!r}, {b!r}
previous = list(range(len(b) + 1))
for i, ca in enumerate(a, 1):
    current = [i]
    for j, cb in enumerate(b, 1):
        current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
    previous = current
print("ANSWER:", previous[-1])
""",
    ),
    "digit_sum_power": (
        "code",
        """
print("ANSWER:", sum(int(d) for d in str({base} ** {exponent})))
""",
    ),
}


def solution(family: str, params: dict[str, Any]) -> tuple[str, str]:
    """``("code", source)`` or ``("shell", command)`` solving a task of ``family``."""
    kind, template = SOLUTIONS[family]
    return kind, template.strip().format(**params)
