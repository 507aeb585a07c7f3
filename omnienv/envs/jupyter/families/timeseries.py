"""Time: daily resampling, rolling windows, gaps, sessions, running balances and calendar arithmetic."""

from __future__ import annotations

import random
from collections import Counter
from datetime import date, datetime, timedelta
from typing import Any

from omnienv.envs.jupyter.families.common import Built, Family, csv_bytes, family, lines_bytes, strict_winner

__all__ = ["FAMILIES"]


@family("""
import pandas as pd
df = pd.read_csv("events.csv", parse_dates=["timestamp"])
daily = df.set_index("timestamp").amount.resample("D").sum()
print("ANSWER:", daily.idxmax().strftime("%Y-%m-%d"))
""")
def busiest_day(rng: random.Random) -> Built:
    start = datetime(2024, rng.randint(1, 10), 1)
    days = rng.randint(21, 30)
    while True:
        rows: list[list[Any]] = []
        totals = Counter[str]()
        for _ in range(rng.randint(600, 1_200)):
            moment = start + timedelta(seconds=rng.randrange(days * 86_400))
            amount = rng.randint(1, 500)
            rows.append([moment.isoformat(sep=" "), amount])
            totals[moment.date().isoformat()] += amount
        best = strict_winner(totals)
        if best is not None:
            break
    rng.shuffle(rows)
    return Built(
        "events.csv lists events (timestamp as YYYY-MM-DD HH:MM:SS, amount), in no particular order. "
        "Summing amount per calendar day, which day has the largest total? Answer as YYYY-MM-DD.",
        best,
        0.0,
        {"events.csv": csv_bytes(["timestamp", "amount"], rows)},
    )


@family("""
import pandas as pd
df = pd.read_csv("daily_sales.csv", parse_dates=["date"]).set_index("date").sort_index()
print("ANSWER:", int(df.units.rolling(f"{days}D").sum().max()))
""")
def rolling_peak(rng: random.Random) -> Built:
    window = rng.choice([7, 7, 14, 30])
    start = date(2023, rng.randint(1, 12), rng.randint(1, 28))
    units: dict[date, int] = {}
    level = rng.randint(20, 80)
    for offset in range(rng.randint(90, 180)):
        level = max(0, level + rng.randint(-8, 8))
        if rng.random() < 0.85:  # no row on days without sales
            units[start + timedelta(offset)] = level + rng.randint(0, 20)
    best = max(sum(units.get(day - timedelta(k), 0) for k in range(window)) for day in units)
    rows = [[day.isoformat(), n] for day, n in units.items()]
    rng.shuffle(rows)
    return Built(
        "daily_sales.csv has units sold per day (date, units), in no particular order; a day without a "
        f"row sold nothing. For each date, its trailing {window}-day sum is the units of that date and the "
        f"{window - 1} calendar days before it. What is the largest trailing {window}-day sum?",
        best,
        0.0,
        {"daily_sales.csv": csv_bytes(["date", "units"], rows)},
        {"days": window},
    )


@family("""
import pandas as pd
rows = [dict(field.split("=", 1) for field in line.split()[1:]) | {"at": line.split()[0]}
        for line in open("heartbeat.log") if line.strip()]
df = pd.DataFrame(rows)
times = pd.to_datetime(df[df.device == device]["at"]).sort_values()
print("ANSWER:", int(times.diff().max().total_seconds()))
""")
def heartbeat_gap(rng: random.Random) -> Built:
    devices = [f"sensor-{n}" for n in rng.sample(range(1, 40), 5)]
    start = datetime(2024, 6, rng.randint(1, 28))
    lines: list[str] = []
    longest: dict[str, int] = {}
    for device in devices:
        second, previous, gap = rng.randint(0, 59), None, 0
        while second < 6 * 3_600:
            if previous is not None:
                gap = max(gap, second - previous)
            status = rng.choices(["ok", "degraded"], [9, 1])[0]
            lines.append(f"{(start + timedelta(seconds=second)).isoformat()}Z device={device} status={status}")
            previous = second
            second += rng.randint(50, 70) if rng.random() > 0.02 else rng.randint(300, 3_000)
        longest[device] = gap
    rng.shuffle(lines)
    device = rng.choice(devices)
    return Built(
        "heartbeat.log has one heartbeat per line, 'TIMESTAMP device=NAME status=STATUS' with UTC "
        "timestamps like 2024-06-01T00:00:07Z; the lines are not in time order. What is the longest gap, "
        f"in whole seconds, between two consecutive heartbeats of the device {device}?",
        longest[device],
        0.0,
        {"heartbeat.log": lines_bytes(lines)},
        {"device": device},
    )


@family("""
import pandas as pd
df = pd.read_csv("clicks.csv", parse_dates=["timestamp"]).sort_values(["user", "timestamp"])
new_session = df.groupby("user").timestamp.diff() > pd.Timedelta(minutes=minutes)
print("ANSWER:", int(df.user.nunique() + new_session.sum()))
""")
def session_count(rng: random.Random) -> Built:
    gap_minutes = rng.choice([15, 20, 30, 45])
    start = datetime(2024, 3, rng.randint(1, 28), 8)
    rows: list[list[Any]] = []
    sessions = 0
    for user in rng.sample(range(1_000, 9_999), rng.randint(20, 40)):
        moment = start + timedelta(seconds=rng.randrange(3_600))
        for click in range(rng.randint(5, 40)):
            if click:
                pause = rng.randint(5, 600) if rng.random() < 0.8 else rng.randint(600, 5_400)
                sessions += pause > gap_minutes * 60
                moment += timedelta(seconds=pause)
            rows.append([f"user{user}", moment.isoformat(sep=" "), rng.choice(["/", "/search", "/cart", "/item"])])
        sessions += 1
    rng.shuffle(rows)
    return Built(
        "clicks.csv lists page clicks (user, timestamp, page), in no particular order. Split each user's "
        f"clicks, in time order, into sessions: a gap of more than {gap_minutes} minutes between two "
        "consecutive clicks of the same user starts a new session. How many sessions are there in total, "
        "over all users?",
        sessions,
        0.0,
        {"clicks.csv": csv_bytes(["user", "timestamp", "page"], rows)},
        {"minutes": gap_minutes},
    )


@family("""
import pandas as pd
df = pd.read_csv("ledger.csv", parse_dates=["timestamp"])
mine = df[df.account == account].sort_values("timestamp")
signed = mine.amount.where(mine.kind == "deposit", -mine.amount)
print("ANSWER:", int(signed.cumsum().min()))
""")
def lowest_balance(rng: random.Random) -> Built:
    accounts = [f"ACC{n}" for n in rng.sample(range(100, 999), 6)]
    start = datetime(2024, 1, 1)
    seconds = rng.sample(range(90 * 86_400), rng.randint(300, 600))  # distinct moments: no ordering ties
    rows: list[list[Any]] = []
    history: dict[str, list[tuple[int, int]]] = {a: [] for a in accounts}
    for second in seconds:
        account = rng.choice(accounts)
        kind = rng.choices(["deposit", "withdrawal"], [45, 55])[0]
        amount = rng.randint(10, 900)
        rows.append([(start + timedelta(seconds=second)).isoformat(sep=" "), account, kind, amount])
        history[account].append((second, amount if kind == "deposit" else -amount))
    account = rng.choice(accounts)
    balance, lowest = 0, None
    for _, change in sorted(history[account]):
        balance += change
        lowest = balance if lowest is None else min(lowest, balance)
    return Built(
        "ledger.csv lists transactions (timestamp, account, kind, amount), in no particular order; kind "
        "is deposit or withdrawal. Every account starts at a balance of 0, and deposits add their amount "
        "and withdrawals subtract it, in timestamp order. What is the lowest balance the account "
        f"{account} reaches after any of its transactions? Answer as an integer (it may be negative).",
        lowest if lowest is not None else 0,
        0.0,
        {"ledger.csv": csv_bytes(["timestamp", "account", "kind", "amount"], rows)},
        {"account": account},
    )


@family("""
import pandas as pd
df = pd.read_csv("subscriptions.csv", parse_dates=["start_date", "end_date"])
day = pd.Timestamp(on)
active = (df.plan == plan) & (df.start_date <= day) & (df.end_date.isna() | (df.end_date >= day))
print("ANSWER:", int(active.sum()))
""")
def active_subscriptions(rng: random.Random) -> Built:
    plans = ["basic", "plus", "pro"]
    origin = date(2022, 1, 1)
    rows: list[list[Any]] = []
    spans: list[tuple[str, date, date | None]] = []
    for sub in range(1, rng.randint(150, 300) + 1):
        plan = rng.choice(plans)
        begin = origin + timedelta(rng.randrange(700))
        end = None if rng.random() < 0.3 else begin + timedelta(rng.randint(0, 400))
        rows.append(
            [sub, f"user{rng.randint(1, 120)}", plan, begin.isoformat(), "" if end is None else end.isoformat()]
        )
        spans.append((plan, begin, end))
    plan = rng.choice(plans)
    # A day that starts or ends some subscription, so inclusive and exclusive bounds give different counts.
    on = rng.choice([d for p, b, e in spans if p == plan for d in (b, e) if d is not None])
    count = sum(1 for p, b, e in spans if p == plan and b <= on and (e is None or on <= e))
    return Built(
        "subscriptions.csv lists subscriptions (subscription_id, user, plan, start_date, end_date). A "
        "subscription is active on every day from start_date to end_date, both included; an empty "
        f"end_date means it has not ended. How many '{plan}' subscriptions were active on {on.isoformat()}?",
        count,
        0.0,
        {"subscriptions.csv": csv_bytes(["subscription_id", "user", "plan", "start_date", "end_date"], rows)},
        {"plan": plan, "on": on.isoformat()},
    )


@family("""
import pandas as pd
df = pd.read_csv("bookings.csv", parse_dates=["check_in", "check_out"])
nights = 0
for row in df[df.room_type == room_type].itertuples():
    stay = pd.date_range(row.check_in, row.check_out - pd.Timedelta(days=1))
    nights += int(stay.dayofweek.isin([4, 5]).sum())  # Monday is 0
print("ANSWER:", nights)
""")
def weekend_nights(rng: random.Random) -> Built:
    room_types = ["single", "double", "suite"]
    origin = date(2024, 1, 1)
    rows: list[list[Any]] = []
    nights = Counter[str]()
    for booking in range(1, rng.randint(80, 160) + 1):
        room = rng.choice(room_types)
        check_in = origin + timedelta(rng.randrange(330))
        stay = rng.randint(1, 14)
        rows.append([booking, room, check_in.isoformat(), (check_in + timedelta(stay)).isoformat()])
        nights[room] += sum(1 for k in range(stay) if (check_in + timedelta(k)).weekday() in (4, 5))
    room = rng.choice(room_types)
    return Built(
        "bookings.csv lists hotel bookings (booking_id, room_type, check_in, check_out). A booking "
        "occupies the nights that start on each day from check_in up to, but not including, check_out. "
        f"Over all '{room}' bookings, how many of the nights occupied start on a Friday or a Saturday?",
        nights[room],
        0.0,
        {"bookings.csv": csv_bytes(["booking_id", "room_type", "check_in", "check_out"], rows)},
        {"room_type": room},
    )


FAMILIES: tuple[Family, ...] = (
    busiest_day,
    rolling_peak,
    heartbeat_gap,
    session_count,
    lowest_balance,
    active_subscriptions,
    weekend_nights,
)
