"""Dirty data: inconsistent case and spacing, mixed date and number formats, units, gaps to fill.

Each question spells out every cleaning rule it expects, so there is one right answer; the work
is in applying the rules to every messy row.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import date, timedelta
from fractions import Fraction
from typing import Any

from omnienv.envs.jupyter.families.common import Built, Family, csv_bytes, decimals, family

__all__ = ["FAMILIES"]

SOURCES = ["ads", "blog", "newsletter", "referral", "search"]
DOMAINS = ["example.com", "mail.example.org", "example.net"]
MONTH_NAMES = "January February March April May June July August September October November December".split()


@family("""
import pandas as pd
df = pd.read_csv("signups.csv", keep_default_na=False)
emails = df[df.source == source].email.str.strip().str.lower()
print("ANSWER:", emails[emails.str.contains("@", regex=False)].nunique())
""")
def distinct_emails(rng: random.Random) -> Built:
    people = [
        f"{rng.choice('abcdefghij')}{rng.choice(['.', '_', ''])}user{n}@{rng.choice(DOMAINS)}" for n in range(150)
    ]
    rows: list[list[Any]] = []
    seen: dict[str, set[str]] = {s: set() for s in SOURCES}
    for signup in range(1, rng.randint(250, 450) + 1):
        source = rng.choice(SOURCES)
        roll = rng.random()
        if roll < 0.06:
            email = rng.choice(["", "n/a", "unknown", "user at example.com"])
        else:
            person = rng.choice(people)
            seen[source].add(person)
            email = rng.choice([person, person.upper(), person.capitalize(), f" {person}", f"{person}  "])
        rows.append([signup, email, source])
    source = rng.choice(SOURCES)
    return Built(
        "signups.csv lists newsletter sign-ups (signup_id, email, source). Emails were typed by hand: "
        "two emails are the same address when they are equal after trimming surrounding spaces and "
        "lower-casing, and an entry without an '@' is not an address. How many distinct addresses signed "
        f"up through the source '{source}'?",
        len(seen[source]),
        0.0,
        {"signups.csv": csv_bytes(["signup_id", "email", "source"], rows)},
        {"source": source},
    )


@family("""
import pandas as pd
from datetime import datetime
def parse_day(text):
    text = text.strip()
    for pattern in ("%Y-%m-%d", "%d/%m/%Y", "%b %d %Y"):
        try:
            return datetime.strptime(text, pattern)
        except ValueError:
            pass
    raise ValueError(text)
df = pd.read_csv("payments.csv", dtype=str)
days = df.paid_on.map(parse_day)
amounts = df.amount.str.replace(r"[$,\\s]", "", regex=True).astype(float)
mine = (days.map(lambda d: d.year) == 2024) & (days.map(lambda d: d.month) == month)
print("ANSWER:", round(float(amounts[mine].sum()), 2))
""")
def mixed_formats(rng: random.Random) -> Built:
    rows: list[list[Any]] = []
    cents = Counter[int]()
    for payment in range(1, rng.randint(200, 350) + 1):
        day = date(2024, 1, 1) + timedelta(rng.randrange(366))
        amount = rng.randint(100, 500_000)
        written_day = rng.choice(
            [
                day.isoformat(),
                f"{day.day:02d}/{day.month:02d}/{day.year}",
                f"{MONTH_NAMES[day.month - 1][:3]} {day.day} {day.year}",
            ]
        )
        whole, fraction = divmod(amount, 100)
        written_amount = rng.choice(
            [f"{whole}.{fraction:02d}", f"${whole:,}.{fraction:02d}", f" {whole:,}.{fraction:02d} "]
        )
        rows.append([payment, written_day, written_amount])
        cents[day.month] += amount
    month = rng.randint(1, 12)
    return Built(
        "payments.csv lists payments (payment_id, paid_on, amount) merged from three systems. paid_on is "
        "written as YYYY-MM-DD, as DD/MM/YYYY (day first) or as 'Mon D YYYY' (e.g. 'Mar 5 2024'); amount "
        "may carry a '$' sign, thousands separators (',') and surrounding spaces. What is the total "
        f"amount paid in {MONTH_NAMES[month - 1]} 2024? Round to 2 decimal places.",
        cents[month] / 100,
        decimals(2),
        {"payments.csv": csv_bytes(["payment_id", "paid_on", "amount"], rows)},
        {"month": month},
    )


KG_PER = {"kg": Fraction(1), "g": Fraction(1, 1000), "lb": Fraction(45_359_237, 100_000_000)}
CITIES = ["Lisbon", "Oslo", "Porto", "Riga", "Turin", "Vilnius"]


@family("""
import pandas as pd
df = pd.read_csv("shipments.csv")
parts = df.weight.str.strip().str.lower().str.extract(r"^([0-9.]+)\\s*(kg|g|lb)$")
kg = parts[0].astype(float) * parts[1].map({"kg": 1.0, "g": 0.001, "lb": 0.45359237})
print("ANSWER:", round(float(kg[df.city == city].sum()), 3))
""")
def shipped_weight(rng: random.Random) -> Built:
    rows: list[list[Any]] = []
    total: dict[str, Fraction] = {c: Fraction(0) for c in CITIES}
    for shipment in range(1, rng.randint(150, 300) + 1):
        city = rng.choice(CITIES)
        unit = rng.choices(["kg", "g", "lb"], [5, 3, 2])[0]
        tenths = rng.randint(1, 500)
        number = str(rng.randint(1, 9_000)) if unit == "g" else f"{tenths // 10}.{tenths % 10}"
        written = f"{number}{rng.choice(['', ' '])}{rng.choice([unit, unit.upper(), unit.capitalize()])}"
        rows.append([shipment, city, rng.choice([written, f" {written} "])])
        total[city] += Fraction(number) * KG_PER[unit]
    city = rng.choice(CITIES)
    return Built(
        "shipments.csv lists shipments (shipment_id, city, weight). Each weight is a number and a unit, "
        "kg, g or lb (1 lb = 0.45359237 kg), written in any letter case, with or without a space between "
        f"them and sometimes with spaces around. What is the total weight, in kg, of the shipments to {city}? "
        "Round to 3 decimal places.",
        float(total[city]),
        decimals(3),
        {"shipments.csv": csv_bytes(["shipment_id", "city", "weight"], rows)},
        {"city": city},
    )


@family("""
import pandas as pd
df = pd.read_csv("stations.csv", parse_dates=["date"]).sort_values(["station", "date"])
df["temperature"] = df.groupby("station").temperature.ffill()
print("ANSWER:", round(float(df[df.station == station].temperature.mean()), 2))
""")
def forward_fill_mean(rng: random.Random) -> Built:
    stations = ["alder", "birch", "cedar", "dogwood", "elm"]
    start = date(2024, rng.randint(1, 12), 1)
    rows: list[list[Any]] = []
    filled: dict[str, list[int]] = {s: [] for s in stations}
    for station in stations:
        level, last = rng.randint(-50, 250), 0
        for offset in range(rng.randint(25, 31)):
            level += rng.randint(-20, 20)
            if offset and rng.random() < 0.2:
                rows.append([(start + timedelta(offset)).isoformat(), station, ""])
            else:
                last = level
                rows.append([(start + timedelta(offset)).isoformat(), station, f"{level / 10:.1f}"])
            filled[station].append(last)
    rng.shuffle(rows)
    station = rng.choice(stations)
    return Built(
        "stations.csv has one row per weather station and day (date, station, temperature), in no "
        "particular order; some temperatures are missing (empty). Fill each missing temperature with the "
        "same station's temperature on its most recent earlier day that has one (every station's first "
        f"day has one). What is then the mean temperature of the station '{station}' over all its days? "
        "Round to 2 decimal places.",
        float(Fraction(sum(filled[station]), 10 * len(filled[station]))),
        decimals(2),
        {"stations.csv": csv_bytes(["date", "station", "temperature"], rows)},
        {"station": station},
    )


FAMILIES: tuple[Family, ...] = (distinct_emails, mixed_formats, shipped_weight, forward_fill_mean)
