"""Statistics: correlation, a regression slope, z-scores, medians, percentiles, ranks and shares.

Each question names its definition (population or sample deviation, nearest-rank percentile,
dense ranking), because the libraries' defaults differ and an answer must not depend on them.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction
from typing import Any

from omnienv.envs.jupyter.families.common import Built, Family, csv_bytes, decimals, family, jsonl_bytes, lines_bytes

__all__ = ["FAMILIES"]


@family("""
import numpy as np, pandas as pd
df = pd.read_csv("xy.csv")
print("ANSWER:", round(float(np.corrcoef(df.x, df.y)[0, 1]), 4))
""")
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
        sxy / math.sqrt(sxx * syy),
        decimals(4),
        {"xy.csv": csv_bytes(["x", "y"], [[x, y] for x, y in zip(xs, ys, strict=True)])},
    )


@family("""
import numpy as np, pandas as pd
df = pd.read_csv("ads.csv")
slope, intercept = np.polyfit(df.spend, df.revenue, 1)
print("ANSWER:", round(float(slope), 3))
""")
def regression_slope(rng: random.Random) -> Built:
    slope, intercept, noise = rng.uniform(1.5, 6.0), rng.uniform(500, 3_000), rng.uniform(100, 600)
    spend = [rng.randint(100, 2_000) for _ in range(rng.randint(40, 80))]
    revenue = [round(intercept + slope * s + rng.gauss(0, noise)) for s in spend]
    n = len(spend)
    fitted = Fraction(
        n * sum(x * y for x, y in zip(spend, revenue, strict=True)) - sum(spend) * sum(revenue),
        n * sum(x * x for x in spend) - sum(spend) ** 2,
    )
    rows = [[week + 1, s, r] for week, (s, r) in enumerate(zip(spend, revenue, strict=True))]
    return Built(
        "ads.csv has one row per week: week, spend (advertising spend) and revenue. Fitting the line "
        "revenue = a + b x spend by ordinary least squares, what is the slope b? Round to 3 decimal places.",
        float(fitted),
        decimals(3),
        {"ads.csv": csv_bytes(["week", "spend", "revenue"], rows)},
    )


@family("""
import pandas as pd
df = pd.read_csv("measurements.csv")
by_machine = df.groupby("machine").reading
z = (df.reading - by_machine.transform("mean")) / by_machine.transform(lambda r: r.std(ddof=0))
print("ANSWER:", int((z.abs() > threshold).sum()))
""")
def zscore_outliers(rng: random.Random) -> Built:
    threshold = rng.choice([2.0, 2.5, 3.0])
    while True:
        rows: list[list[Any]] = []
        outliers, borderline = 0, False
        for machine in ("press", "lathe", "drill", "mill", "saw"):
            centre, spread = rng.uniform(50, 150), rng.uniform(2, 10)
            readings = [round(rng.gauss(centre, spread), 2) for _ in range(rng.randint(50, 120))]
            for _ in range(rng.randint(1, 4)):
                readings[rng.randrange(len(readings))] = round(
                    centre + rng.choice([-1, 1]) * rng.uniform(3, 6) * spread, 2
                )
            mean = sum(readings) / len(readings)
            deviation = math.sqrt(sum((r - mean) ** 2 for r in readings) / len(readings))
            for reading in readings:
                z = abs(reading - mean) / deviation
                outliers += z > threshold
                borderline |= abs(z - threshold) < 1e-6
            rows.extend([machine, reading] for reading in readings)
        if not borderline:
            break
    rng.shuffle(rows)
    return Built(
        "measurements.csv has sensor readings (machine, reading). Within each machine, a reading's z-score "
        "is (reading - that machine's mean) / that machine's standard deviation, using the population "
        f"standard deviation (dividing by n, not n - 1). How many readings have |z| > {threshold}?",
        outliers,
        0.0,
        {"measurements.csv": csv_bytes(["machine", "reading"], rows)},
        {"threshold": threshold},
    )


SERVICES = ["gateway", "search", "checkout", "profile", "catalog"]


@family("""
import pandas as pd
df = pd.read_json("latency.jsonl", lines=True)
print("ANSWER:", round(float(df[(df.service == service) & df.ok].ms.median()), 1))
""")
def median_latency(rng: random.Random) -> Built:
    records: list[dict[str, Any]] = []
    for _ in range(rng.randint(500, 900)):
        service = rng.choice(SERVICES)
        records.append(
            {
                "service": service,
                "ms": round(rng.lognormvariate(4 + SERVICES.index(service) / 4, 0.6)),
                "ok": rng.random() < 0.9,
            }
        )
    service = rng.choice(SERVICES)
    values = sorted(r["ms"] for r in records if r["service"] == service and r["ok"])
    middle = len(values) // 2
    median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    return Built(
        "latency.jsonl has one JSON object per line for each request: service, ms (its latency in "
        f"milliseconds) and ok (whether it succeeded). What is the median ms of the successful requests "
        f"(ok is true) to the '{service}' service? With an even count the median is the mean of the two "
        "middle values. Round to 1 decimal place.",
        float(median),
        decimals(1),
        {"latency.jsonl": jsonl_bytes(records)},
        {"service": service},
    )


@family("""
values = []
for line in open("latencies.txt"):
    try:
        values.append(int(line))
    except ValueError:
        pass
values.sort()
rank = -(-percent * len(values) // 100)  # ceil without floating point
print("ANSWER:", values[rank - 1])
""")
def nearest_rank_percentile(rng: random.Random) -> Built:
    percent = rng.choice([75, 90, 95, 99])
    values = [round(rng.expovariate(1 / 120)) + 5 for _ in range(rng.randint(300, 900))]
    lines = [str(v) for v in values]
    for _ in range(rng.randint(5, 20)):
        lines.insert(rng.randrange(len(lines)), rng.choice(["n/a", "timeout", "", "-"]))
    rank = -(-percent * len(values) // 100)
    return Built(
        "latencies.txt has one response time per line, in whole milliseconds; some lines are not numbers "
        f"(n/a, timeout, blank) and must be ignored. What is the {percent}th percentile by the nearest-rank "
        f"method, the smallest value v such that at least {percent}% of the values are <= v?",
        sorted(values)[rank - 1],
        0.0,
        {"latencies.txt": lines_bytes(lines)},
        {"percent": percent},
    )


@family("""
import pandas as pd
totals = pd.read_csv("rounds.csv").groupby("player").points.sum()
print("ANSWER:", int(totals.rank(method="dense", ascending=False)[player]))
""")
def dense_rank(rng: random.Random) -> Built:
    players = [f"player_{i:02d}" for i in range(1, rng.randint(25, 40) + 1)]
    rows: list[list[Any]] = []
    totals = Counter[str]()
    for round_number in range(1, rng.randint(6, 10) + 1):
        for player in players:
            if rng.random() < 0.85:
                points = rng.randint(0, 10)
                rows.append([round_number, player, points])
                totals[player] += points
    shared = [p for p in totals if sum(1 for q in totals if totals[q] == totals[p]) > 1]
    player = rng.choice(shared if shared and rng.random() < 0.6 else sorted(totals))
    distinct = sorted(set(totals.values()), reverse=True)
    return Built(
        "rounds.csv has the points (round, player, points) each player scored in the rounds they played. "
        "Rank players by their total points over all rounds, highest first, with dense ranking: tied "
        "totals share a rank and the next lower total gets the next rank (1, 2, 2, 3). What is the rank "
        f"of {player}?",
        distinct.index(totals[player]) + 1,
        0.0,
        {"rounds.csv": csv_bytes(["round", "player", "points"], rows)},
        {"player": player},
    )


@family("""
import pandas as pd
df = pd.read_csv("survey.csv", keep_default_na=False)
answer = df.answer.str.strip().str.lower()
part = answer[(df.age >= low) & (df.age <= high) & (answer != "")]
print("ANSWER:", round(float((part == "yes").mean() * 100), 1))
""")
def survey_share(rng: random.Random) -> Built:
    low = rng.randint(20, 50)
    high = low + rng.randint(9, 20)
    rows: list[list[Any]] = []
    yes = answered = 0
    for respondent in range(1, rng.randint(300, 600) + 1):
        age = rng.randint(18, 80)
        answer = rng.choices(["yes", "no", ""], [4 + age % 5, 5, 1])[0]
        if answer and low <= age <= high:
            answered += 1
            yes += answer == "yes"
        written = rng.choice([answer, answer.upper(), answer.capitalize(), f" {answer}", f"{answer} "])
        rows.append([respondent, age, written if answer else ""])
    return Built(
        "survey.csv has one row per respondent: respondent, age and answer. Answers are yes or no, in "
        "any letter case and possibly with spaces around them; a blank answer means no answer. Among "
        f"respondents aged {low} to {high} (both included) who answered, what percentage answered yes? "
        "Round to 1 decimal place (42.857% is 42.9).",
        float(Fraction(100 * yes, answered)),
        decimals(1),
        {"survey.csv": csv_bytes(["respondent", "age", "answer"], rows)},
        {"low": low, "high": high},
    )


FAMILIES: tuple[Family, ...] = (
    correlation,
    regression_slope,
    zscore_outliers,
    median_latency,
    nearest_rank_percentile,
    dense_rank,
    survey_share,
)
