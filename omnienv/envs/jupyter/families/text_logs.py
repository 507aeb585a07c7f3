"""Text to parse: application and web-server logs, key=value metrics, nested JSON, prose."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from omnienv.envs.jupyter.families.common import (
    Built,
    Family,
    decimals,
    family,
    jsonl_bytes,
    lines_bytes,
    strict_winner,
)

__all__ = ["FAMILIES"]

COMPONENTS = ["auth", "db", "api", "cache", "queue", "billing"]
WORDS = (
    "river stone cloud lantern orchard meadow harbor falcon copper willow ember canyon glacier "
    "thunder pepper violet maple comet velvet marble cedar puzzle rocket garden silver"
).split()
MONTH_ABBREVIATIONS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


@family(shell="""echo ANSWER: $(grep -c " ERROR \\[$component\\] " server.log)""")
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
        {"server.log": lines_bytes(lines)},
        {"component": component},
    )


@family("""
import json
from collections import Counter
spent = Counter()
for order in json.load(open("orders.json")):
    spent[order["customer"]] += sum(i["qty"] * i["price"] for i in order["items"])
print("ANSWER:", spent.most_common(1)[0][0])
""")
def json_orders(rng: random.Random) -> Built:
    customers = rng.sample(["ada", "grace", "alan", "linus", "barbara", "ken", "margaret", "dennis"], 6)
    while True:
        orders, spent = [], Counter[str]()
        for i in range(rng.randint(40, 80)):
            customer = rng.choice(customers)
            items: list[dict[str, Any]] = [
                {"sku": f"SKU-{rng.randint(100, 999)}", "qty": rng.randint(1, 5), "price": round(rng.uniform(1, 50), 2)}
                for _ in range(rng.randint(1, 4))
            ]
            spent[customer] += sum(item["qty"] * item["price"] for item in items)
            orders.append({"id": i + 1, "customer": customer, "items": items})
        best = strict_winner(spent, margin=0.01)
        if best is not None:
            break
    return Built(
        "orders.json is a list of orders, each with a customer and items (sku, qty, price). Which "
        "customer spent the most in total (sum of qty x price)? Answer with the customer's name.",
        best,
        0.0,
        {"orders.json": json.dumps(orders, indent=1).encode()},
    )


@family("""
from collections import Counter
words = open("text.txt").read().lower().replace(",", " ").replace(".", " ").split()
print("ANSWER:", Counter(words).most_common(1)[0][0])
""")
def word_frequency(rng: random.Random) -> Built:
    while True:
        weights = [rng.random() ** 2 for _ in WORDS]
        words = rng.choices(WORDS, weights, k=rng.randint(1500, 2500))
        best = strict_winner(Counter(words))
        if best is not None:
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
        {"text.txt": lines_bytes(text)},
    )


PATHS = ["/", "/index.html", "/login", "/static/app.js", "/static/style.css", "/api/cart", "/api/search", "/api/items/"]


@family("""
import re
pattern = re.compile(r'^(\\S+) \\S+ \\S+ \\[[^\\]]+\\] "\\S+ (\\S+) [^"]*" (\\d{3}) ')
clients = set()
for line in open("access.log"):
    found = pattern.match(line)
    if found and found[2].startswith("/api/") and int(found[3]) // 100 == status_class:
        clients.add(found[1])
print("ANSWER:", len(clients))
""")
def access_log(rng: random.Random) -> Built:
    status_class = rng.choice([4, 5])
    clients = [
        f"{rng.choice(['10.0', '192.168', '203.0'])}.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(40)
    ]
    moment = datetime(2024, rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 12))
    lines, matching = [], set()
    for _ in range(rng.randint(400, 800)):
        moment += timedelta(seconds=rng.randint(0, 20))
        client, path = rng.choice(clients), rng.choice(PATHS)
        path += str(rng.randint(1, 500)) if path.endswith("/items/") else ""
        status = rng.choices([200, 304, 404, 403, 500, 502, 503], [70, 8, 6, 2, 3, 2, 2])[0]
        method = "POST" if path == "/api/cart" and rng.random() < 0.5 else "GET"
        size = 0 if status in (304, 502, 503) else rng.randint(200, 50_000)
        stamp = f"{moment.day:02d}/{MONTH_ABBREVIATIONS[moment.month - 1]}/{moment.year}:{moment:%H:%M:%S} +0000"
        lines.append(f'{client} - - [{stamp}] "{method} {path} HTTP/1.1" {status} {size}')
        if path.startswith("/api/") and status // 100 == status_class:
            matching.add(client)
    return Built(
        "access.log is a web server's access log in the common log format: 'CLIENT_IP - - [TIME] "
        '"METHOD PATH PROTOCOL" STATUS BYTES\'. How many distinct client IPs received at least one '
        f"{status_class}xx response (status {status_class}00 to {status_class}99) to a request whose path "
        "starts with /api/?",
        len(matching),
        0.0,
        {"access.log": lines_bytes(lines)},
        {"status_class": status_class},
    )


@family("""
import pandas as pd
records = [dict(field.split("=", 1) for field in line.split()) for line in open("metrics.log") if line.strip()]
df = pd.DataFrame(records)
cpu = pd.to_numeric(df.cpu).groupby(df.host).mean()
print("ANSWER:", cpu.idxmax())
""")
def busiest_host(rng: random.Random) -> Built:
    hosts = [f"web-{n}" for n in range(1, rng.randint(5, 8) + 1)]
    start = datetime(2024, 4, rng.randint(1, 28))
    while True:
        load = {h: rng.uniform(20, 70) for h in hosts}
        lines: list[str] = []
        readings: dict[str, list[int]] = {h: [] for h in hosts}
        for minute in range(rng.randint(60, 120)):
            for host in hosts:
                fields = [f"ts={(start + timedelta(minutes=minute)).isoformat()}", f"host={host}"]
                fields.append(f"mem={rng.randint(200, 900) / 10}")
                if rng.random() < 0.9:  # the collector sometimes misses the cpu
                    tenths = max(0, min(1000, round(rng.gauss(load[host], 15) * 10)))
                    readings[host].append(tenths)
                    fields.append(f"cpu={tenths / 10}")
                rng.shuffle(fields)
                lines.append(" ".join(fields))
        means = {h: sum(r) / len(r) / 10 for h, r in readings.items()}
        best = strict_winner(means, margin=0.05)
        if best is not None:
            break
    return Built(
        "metrics.log has one sample per line as space-separated key=value fields (ts, host, cpu, mem) in "
        "any order; some lines have no cpu field. Averaging cpu over the lines that have it, which host has "
        "the highest average cpu? Answer with the host name.",
        best,
        0.0,
        {"metrics.log": lines_bytes(lines)},
    )


@family("""
import json
import pandas as pd
df = pd.json_normalize([json.loads(line) for line in open("events.jsonl")])
mine = df[(df.event == event) & (df["user.plan"] == plan)]
print("ANSWER:", round(float(mine["props.duration_ms"].dropna().mean()), 1))
""")
def nested_events(rng: random.Random) -> Built:
    plans, events = ["free", "team", "enterprise"], ["export", "search", "share", "upload"]
    users = {n: rng.choice(plans) for n in rng.sample(range(1, 10_000), 60)}
    while True:
        records: list[dict[str, Any]] = []
        durations: dict[tuple[str, str], list[int]] = {}
        for _ in range(rng.randint(400, 700)):
            user = rng.choice(sorted(users))
            event = rng.choice(events)
            record: dict[str, Any] = {"user": {"id": user, "plan": users[user]}, "event": event}
            roll = rng.random()
            if roll < 0.8:
                duration = round(rng.lognormvariate(6 + events.index(event) / 3, 0.5))
                record["props"] = {"duration_ms": duration, "client": rng.choice(["web", "ios", "android"])}
                durations.setdefault((event, users[user]), []).append(duration)
            elif roll < 0.9:
                record["props"] = {"client": rng.choice(["web", "ios", "android"])}
            records.append(record)
        event, plan = rng.choice(events), rng.choice(plans)
        if durations.get((event, plan)):
            break
    values = durations[(event, plan)]
    return Built(
        "events.jsonl has one JSON object per line for each product event: user (an object with id and "
        "plan), event (its name) and, usually, props (an object that may hold duration_ms). Over the "
        f"'{event}' events of users on the '{plan}' plan that have a props.duration_ms, what is the average "
        "duration_ms? Round to 1 decimal place.",
        float(Fraction(sum(values), len(values))),
        decimals(1),
        {"events.jsonl": jsonl_bytes(records)},
        {"event": event, "plan": plan},
    )


FAMILIES: tuple[Family, ...] = (log_errors, json_orders, word_frequency, access_log, busiest_host, nested_events)
