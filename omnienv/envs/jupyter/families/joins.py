"""Several files, or several versions of one record: joins, set operations, latest versions, trees."""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from omnienv.envs.jupyter.families.common import Built, Family, csv_bytes, decimals, family, jsonl_bytes, lines_bytes

__all__ = ["FAMILIES"]

COUNTRIES = ["Brazil", "Canada", "Egypt", "France", "India", "Japan", "Kenya", "Mexico", "Norway", "Spain"]
FIRST_NAMES = "ada alan barbara dennis edsger frances grace guido ken linus margaret niklaus radia tim yukihiro".split()


@family("""
import pandas as pd
customers = pd.read_csv("customers.csv")
orders = pd.read_csv("orders.csv")
joined = orders.merge(customers, on="customer_id", how="inner")
paid = joined[(joined.status == "paid") & (joined.country == country)]
print("ANSWER:", round(float(paid.amount.sum()), 2))
""")
def country_revenue(rng: random.Random) -> Built:
    countries = rng.sample(COUNTRIES, rng.randint(5, 8))
    customers = [(100 + i, f"{rng.choice(FIRST_NAMES)}_{i}", rng.choice(countries)) for i in range(rng.randint(40, 80))]
    country_of = {cid: c for cid, _, c in customers}
    departed = list(range(100 + len(customers), 110 + len(customers)))  # customers deleted since they ordered
    orders: list[list[Any]] = []
    cents = Counter[str]()
    for order_id in range(1, rng.randint(200, 400) + 1):
        customer = rng.choice(departed) if rng.random() < 0.08 else rng.choice(customers)[0]
        amount = rng.randint(500, 50_000)
        status = rng.choices(["paid", "refunded", "pending"], [8, 1, 1])[0]
        orders.append([order_id, customer, f"{amount / 100:.2f}", status])
        if status == "paid" and customer in country_of:
            cents[country_of[customer]] += amount
    country = rng.choice(sorted(cents))
    return Built(
        "customers.csv lists customers (customer_id, name, country) and orders.csv lists orders "
        "(order_id, customer_id, amount, status). What is the total amount of the orders with status "
        f"'paid' placed by customers from {country}? Orders whose customer_id is not in customers.csv "
        "belong to no country. Round to 2 decimal places.",
        cents[country] / 100,
        decimals(2),
        {
            "customers.csv": csv_bytes(["customer_id", "name", "country"], customers),
            "orders.csv": csv_bytes(["order_id", "customer_id", "amount", "status"], orders),
        },
        {"country": country},
    )


@family("""
import pandas as pd
products = pd.read_csv("products.tsv", sep="\\t")
stock = pd.read_json("stock.jsonl", lines=True).groupby("sku").qty.sum()
on_hand = products.sku.map(stock).fillna(0)
print("ANSWER:", int((on_hand < products.reorder_level).sum()))
""")
def reorder_needed(rng: random.Random) -> Built:
    skus = [f"SKU-{n}" for n in rng.sample(range(1000, 9999), rng.randint(40, 70))]
    products = [(sku, f"part {i}", rng.randint(5, 60)) for i, sku in enumerate(skus)]
    warehouses = ["berlin", "dallas", "osaka"]
    lines: list[dict[str, Any]] = []
    on_hand = Counter[str]()
    for sku in skus:
        if rng.random() < 0.12:
            continue  # never stocked
        for warehouse in rng.sample(warehouses, rng.randint(1, 3)):
            qty = rng.randint(0, 40)
            lines.append({"sku": sku, "warehouse": warehouse, "qty": qty})
            on_hand[sku] += qty
    for n in rng.sample(range(10_000, 10_100), 5):  # discontinued parts still on the shelves
        lines.append({"sku": f"SKU-{n}", "warehouse": rng.choice(warehouses), "qty": rng.randint(1, 40)})
    rng.shuffle(lines)
    return Built(
        "products.tsv (tab-separated: sku, name, reorder_level) lists the products, and stock.jsonl has "
        "one JSON object per line (sku, warehouse, qty) with the quantity held in each warehouse. How many "
        "products have a total quantity over all warehouses strictly below their reorder_level? A product "
        "with no line in stock.jsonl has 0; lines for SKUs not in products.tsv are ignored.",
        sum(1 for sku, _, level in products if on_hand[sku] < level),
        0.0,
        {
            "products.tsv": csv_bytes(["sku", "name", "reorder_level"], products, delimiter="\t"),
            "stock.jsonl": jsonl_bytes(lines),
        },
    )


@family("""
def users(week):
    return {line.strip().lower() for line in open(f"week{week}.txt") if line.strip()}
print("ANSWER:", len((users(both[0]) & users(both[1])) - users(without)))
""")
def user_overlap(rng: random.Random) -> Built:
    population = [f"u{n:05d}" for n in rng.sample(range(100_000), 400)]
    weeks: dict[int, set[str]] = {}
    files: dict[str, bytes] = {}
    for week in (1, 2, 3):
        active = set(rng.sample(population, rng.randint(150, 250)))
        weeks[week] = active
        lines = [user for user in active for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        rng.shuffle(lines)
        written = [rng.choice([u, u.upper(), f"  {u}", f"{u} "]) for u in lines]
        for _ in range(rng.randint(3, 10)):
            written.insert(rng.randrange(len(written)), "")
        files[f"week{week}.txt"] = lines_bytes(written)
    order = [1, 2, 3]
    rng.shuffle(order)
    both, without = sorted(order[:2]), order[2]
    return Built(
        "week1.txt, week2.txt and week3.txt list the ids of the users active in each of three weeks, one "
        "per line; a user may appear several times, ids are case-insensitive, and blank lines and spaces "
        f"around ids mean nothing. How many distinct users were active in both week {both[0]} and week "
        f"{both[1]} but not in week {without}?",
        len((weeks[both[0]] & weeks[both[1]]) - weeks[without]),
        0.0,
        files,
        {"both": both, "without": without},
    )


@family("""
import pandas as pd
df = pd.read_json("customer_updates.jsonl", lines=True)
df["updated_at"] = pd.to_datetime(df.updated_at)
current = df.sort_values("updated_at").groupby("customer_id").tail(1)
print("ANSWER:", int((current.tier == tier).sum()))
""")
def latest_record(rng: random.Random) -> Built:
    start = datetime(2023, 1, 1)
    tiers = ["bronze", "silver", "gold", "platinum"]
    records: list[dict[str, Any]] = []
    current: dict[int, str] = {}
    for customer in range(1, rng.randint(60, 120) + 1):
        minutes = sorted(rng.sample(range(525_600), rng.randint(1, 5)))  # distinct moments within a year
        tier = rng.choice(tiers)
        for minute in minutes:
            tier = tier if rng.random() < 0.4 else rng.choice(tiers)
            stamp = (start + timedelta(minutes=minute)).isoformat()
            records.append(
                {"customer_id": customer, "updated_at": stamp, "tier": tier, "email": f"c{customer}@example.org"}
            )
        current[customer] = tier
    rng.shuffle(records)
    tier = rng.choice(tiers)
    return Built(
        "customer_updates.jsonl has one JSON object per line, each a version of a customer's record "
        "(customer_id, updated_at, tier, email), in no particular order. A customer's current record is "
        f"the version with the latest updated_at. How many customers currently have the tier '{tier}'?",
        sum(1 for t in current.values() if t == tier),
        0.0,
        {"customer_updates.jsonl": jsonl_bytes(records)},
        {"tier": tier},
    )


@family("""
import pandas as pd
df = pd.read_csv("employees.csv")
reports = df.groupby("manager_id").employee_id.apply(list).to_dict()
found, todo = 0, [manager]
while todo:
    for report in reports.get(todo.pop(), []):
        found += 1
        todo.append(report)
print("ANSWER:", found)
""")
def org_reports(rng: random.Random) -> Built:
    ids = rng.sample(range(100, 1000), rng.randint(60, 120))
    manager_of: dict[int, int | None] = {ids[0]: None}
    for i, employee in enumerate(ids[1:], 1):
        manager_of[employee] = ids[rng.randrange(max(0, i - 15), i)]  # deep, not only wide
    below = Counter[int]()
    for employee in ids:
        boss = manager_of[employee]
        while boss is not None:
            below[boss] += 1
            boss = manager_of[boss]
    manager = rng.choice(sorted(e for e, n in below.items() if 3 <= n < len(ids) - 1))
    rows = [[e, f"{rng.choice(FIRST_NAMES).capitalize()} {e}", "" if m is None else m] for e, m in manager_of.items()]
    rng.shuffle(rows)
    return Built(
        "employees.csv lists employees (employee_id, name, manager_id); the manager_id of the head of the "
        "company is empty. How many employees report to employee "
        f"{manager}, directly or through any chain of managers?",
        below[manager],
        0.0,
        {"employees.csv": csv_bytes(["employee_id", "name", "manager_id"], rows)},
        {"manager": manager},
    )


FAMILIES: tuple[Family, ...] = (country_revenue, reorder_needed, user_overlap, latest_record, org_reports)
