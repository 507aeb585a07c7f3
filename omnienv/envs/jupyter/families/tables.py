"""Tables: filters, group-bys, pivots, weighted means, top-k and histograms over one file."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import date, timedelta
from fractions import Fraction
from itertools import pairwise
from typing import Any

from omnienv.envs.jupyter.families.common import Built, Family, csv_bytes, decimals, family, strict_winner

__all__ = ["FAMILIES"]

REGIONS = ["north", "south", "east", "west"]
PRODUCTS = ["apple", "banana", "cherry", "durian", "elderberry", "fig"]
MONTHS = ["January", "February", "March", "April", "May", "June"]
SALES_HEADER = ["date", "region", "product", "units", "unit_price"]


def _sales(rng: random.Random) -> list[list[Any]]:
    prices = {p: round(rng.uniform(0.5, 9.5), 2) for p in PRODUCTS}
    rows = []
    for _ in range(rng.randint(150, 250)):
        product = rng.choice(PRODUCTS)
        day = f"2024-{rng.randint(1, 6):02d}-{rng.randint(1, 28):02d}"
        rows.append([day, rng.choice(REGIONS), product, rng.randint(1, 20), prices[product]])
    rows.sort()
    return rows


@family("""
import pandas as pd
df = pd.read_csv("sales.csv")
part = df[df.region == region]
print("ANSWER:", round(float((part.units * part.unit_price).sum()), 2))
""")
def sales_total(rng: random.Random) -> Built:
    rows = _sales(rng)
    region = rng.choice(REGIONS)
    cents = sum(units * round(price * 100) for _, r, _, units, price in rows if r == region)
    return Built(
        f"sales.csv lists sales (date, region, product, units, unit_price). What is the total revenue "
        f"(units x unit_price) of the '{region}' region? Round to 2 decimal places.",
        cents / 100,
        decimals(2),
        {"sales.csv": csv_bytes(SALES_HEADER, rows)},
        {"region": region},
    )


@family("""
import pandas as pd
df = pd.read_csv("sales.csv", parse_dates=["date"])
units = df[df.date.dt.month == month].groupby("product").units.sum()
print("ANSWER:", units.idxmax())
""")
def sales_top_product(rng: random.Random) -> Built:
    while True:
        rows = _sales(rng)
        month = rng.randint(1, 6)
        units = Counter[str]()
        for day, _, product, n, _ in rows:
            if int(day[5:7]) == month:
                units[product] += n
        best = strict_winner(units)
        if best is not None:
            break
    return Built(
        f"sales.csv lists sales (date, region, product, units, unit_price) in 2024. Which product "
        f"sold the most units in {MONTHS[month - 1]} 2024? Answer with the product name.",
        best,
        0.0,
        {"sales.csv": csv_bytes(SALES_HEADER, rows)},
        {"month": month},
    )


@family("""
import pandas as pd
df = pd.read_csv("readings.csv")
print("ANSWER:", round(float(df[df.sensor == sensor].temperature.mean()), 3))
""")
def sensor_mean(rng: random.Random) -> Built:
    rows: list[list[Any]] = []
    for minute in range(rng.randint(60, 120)):
        for sensor in ("S1", "S2", "S3", "S4"):
            value = "" if rng.random() < 0.1 else round(rng.gauss(20 + int(sensor[1]), 3), 2)
            rows.append([sensor, minute, value])
    sensor = rng.choice(["S1", "S2", "S3", "S4"])
    hundredths = [round(v * 100) for s, _, v in rows if s == sensor and v != ""]
    return Built(
        f"readings.csv has temperature readings (sensor, minute, temperature); some temperatures are "
        f"missing (empty). What is the mean temperature of sensor {sensor}, ignoring missing readings? "
        f"Round to 3 decimal places.",
        sum(hundredths) / len(hundredths) / 100,
        decimals(3),
        {"readings.csv": csv_bytes(["sensor", "minute", "temperature"], rows)},
        {"sensor": sensor},
    )


@family("""
import pandas as pd
df = pd.read_csv("students.csv")
print("ANSWER:", int((df[["math", "physics", "chemistry"]].sum(axis=1) >= 3 * threshold).sum()))
""")
def grades_pass(rng: random.Random) -> Built:
    rows = [
        (f"student_{i:03d}", rng.randint(20, 100), rng.randint(20, 100), rng.randint(20, 100))
        for i in range(rng.randint(80, 150))
    ]
    threshold = rng.randint(55, 75)
    count = sum(1 for _, a, b, c in rows if a + b + c >= 3 * threshold)
    return Built(
        f"students.csv has each student's math, physics and chemistry scores. How many students have "
        f"an average score (over the three subjects) of at least {threshold}?",
        count,
        0.0,
        {"students.csv": csv_bytes(["name", "math", "physics", "chemistry"], rows)},
        {"threshold": threshold},
    )


@family("""
import pandas as pd
df = pd.read_csv("quarterly.csv")
totals = df.pivot_table(index="store", columns="quarter", values="revenue", aggfunc="sum")
totals = totals[["Q1", "Q2", "Q3", "Q4"]]
print("ANSWER:", int((totals.diff(axis=1).iloc[:, 1:] > 0).all(axis=1).sum()))
""")
def quarterly_growth(rng: random.Random) -> Built:
    rows: list[list[Any]] = []
    growing = 0
    for store in range(1, rng.randint(25, 40) + 1):
        trend, base = rng.uniform(-0.1, 0.3), rng.randint(2_000, 8_000)
        totals = []
        for quarter in range(4):
            entries = rng.randint(1, 4)
            share = base * (1 + trend) ** quarter / entries
            amounts = [max(1, round(share * rng.uniform(0.7, 1.3))) for _ in range(entries)]
            rows.extend([f"store_{store:02d}", f"Q{quarter + 1}", amount] for amount in amounts)
            totals.append(sum(amounts))
        growing += all(a < b for a, b in pairwise(totals))
    rng.shuffle(rows)
    return Built(
        "quarterly.csv lists revenue entries (store, quarter, revenue) for the quarters Q1 to Q4 of one "
        "year, several per store and quarter, in no particular order. Summing revenue per store and "
        "quarter, in how many stores does the total rise strictly from each quarter to the next "
        "(Q1 < Q2 < Q3 < Q4)?",
        growing,
        0.0,
        {"quarterly.csv": csv_bytes(["store", "quarter", "revenue"], rows)},
    )


GRADE_POINTS = {"A": 4, "B": 3, "C": 2, "D": 1, "F": 0}
COURSES = {
    "algebra": 4,
    "biology": 3,
    "chemistry": 4,
    "drawing": 2,
    "economics": 3,
    "french": 3,
    "geometry": 4,
    "history": 3,
    "music": 1,
    "physics": 5,
    "rhetoric": 2,
    "statistics": 3,
}


@family("""
import pandas as pd
df = pd.read_csv("transcript.csv")
points = {"A": 4, "B": 3, "C": 2, "D": 1, "F": 0}
mine = df[(df.student == student) & (df.grade != "W")]
print("ANSWER:", round(float((mine.credits * mine.grade.map(points)).sum() / mine.credits.sum()), 3))
""")
def weighted_gpa(rng: random.Random) -> Built:
    rows: list[list[Any]] = []
    graded: dict[str, list[tuple[int, int]]] = {}
    for i in range(rng.randint(30, 50)):
        student = f"s{i + 100:03d}"
        graded[student] = []
        for course in rng.sample(sorted(COURSES), rng.randint(4, 8)):
            grade = rng.choices(["A", "B", "C", "D", "F", "W"], [5, 6, 4, 2, 1, 1])[0]
            rows.append([student, course, COURSES[course], grade])
            if grade != "W":
                graded[student].append((COURSES[course], GRADE_POINTS[grade]))
    student = rng.choice(sorted(s for s, results in graded.items() if len(results) >= 3))
    results = graded[student]
    gpa = Fraction(sum(c * p for c, p in results), sum(c for c, _ in results))
    return Built(
        "transcript.csv lists course results (student, course, credits, grade). Grade points are A=4, "
        "B=3, C=2, D=1, F=0; a grade of W (withdrawn) counts in neither sum. What is the credit-weighted "
        f"grade point average of student {student}, the sum of credits x points over the sum of "
        "credits? Round to 3 decimal places.",
        float(gpa),
        decimals(3),
        {"transcript.csv": csv_bytes(["student", "course", "credits", "grade"], rows)},
        {"student": student},
    )


PACKAGES = ["lumen", "quartz", "pylon", "ferrite", "nimbus", "tessera", "orbit", "kestrel", "basalt", "zephyr"]


@family("""
import pandas as pd
df = pd.read_csv("downloads.tsv", sep="\\t", parse_dates=["date"])
window = df[(df.date >= first) & (df.date <= last)]
top = window.groupby("package").downloads.sum().sort_values(ascending=False).head(3)
print("ANSWER:", ", ".join(top.index))
""")
def top_downloads(rng: random.Random) -> Built:
    start = date(2024, 2, 1)
    while True:
        popularity = {p: rng.randint(200, 2_000) for p in PACKAGES}
        rows: list[list[Any]] = []
        for offset in range(35):
            for package in PACKAGES:
                if rng.random() < 0.9:
                    downloads = round(popularity[package] * rng.uniform(0.5, 1.5))
                    rows.append([(start + timedelta(offset)).isoformat(), package, downloads])
        first = start + timedelta(rng.randint(0, 10))
        last = first + timedelta(rng.randint(10, 20))
        totals = Counter[str]()
        for day, package, downloads in rows:
            if first.isoformat() <= day <= last.isoformat():
                totals[package] += downloads
        ranked = totals.most_common(4)
        if all(a[1] > b[1] for a, b in pairwise(ranked)):
            break
    return Built(
        f"downloads.tsv (tab-separated: date, package, downloads) has daily download counts. Which 3 "
        f"packages had the most downloads in total from {first} to {last}, both days included? Answer "
        "with their names from most to fewest downloads, separated by a comma and a space, e.g. "
        "'alpha, beta, gamma'.",
        ", ".join(package for package, _ in ranked[:3]),
        0.0,
        {"downloads.tsv": csv_bytes(["date", "package", "downloads"], rows, delimiter="\t")},
        {"first": first.isoformat(), "last": last.isoformat()},
    )


@family("""
import pandas as pd
ages = pd.read_json("people.json").age.dropna().astype(int)
counts = (ages // width * width).value_counts()
print("ANSWER:", int(counts[counts == counts.max()].index.min()))
""")
def age_histogram(rng: random.Random) -> Built:
    width = rng.choice([5, 10])
    while True:
        centres = [rng.uniform(20, 80) for _ in range(3)]
        people: list[dict[str, Any]] = []
        bins = Counter[str]()
        for i in range(rng.randint(200, 400)):
            person: dict[str, Any] = {"name": f"person_{i:03d}"}
            roll = rng.random()
            if roll < 0.05:
                person["age"] = None
            elif roll < 0.08:
                pass  # no age recorded at all
            else:
                age = min(99, max(18, round(rng.gauss(rng.choice(centres), 8))))
                person["age"] = age
                bins[str(age // width * width)] += 1
            people.append(person)
        best = strict_winner(bins)
        if best is not None:
            break
    return Built(
        f"people.json is a list of people; some have an age of null or no age at all. Put the known ages "
        f"into bins {width} years wide: [0, {width}), [{width}, {2 * width}), and so on. Which bin holds "
        f"the most people? Answer with the bin's lower edge as an integer (0 for the bin [0, {width})).",
        int(best),
        0.0,
        {"people.json": json.dumps(people, indent=1).encode()},
        {"width": width},
    )


FAMILIES: tuple[Family, ...] = (
    sales_total,
    sales_top_product,
    sensor_mean,
    grades_pass,
    quarterly_growth,
    weighted_gpa,
    top_downloads,
    age_histogram,
)
