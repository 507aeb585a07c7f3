#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import csv
from decimal import Decimal
region = {r["customer_id"]: r["region"] for r in csv.DictReader(open("customers.csv", newline=""))}
agg = {}
for o in csv.DictReader(open("orders.csv", newline="")):
    if o["status"] == "completed":
        a = agg.setdefault(region.get(o["customer_id"], "UNKNOWN"), [0, Decimal(0)])
        a[0] += 1
        a[1] += Decimal(o["amount"])
with open("region_revenue.csv", "w") as f:
    f.write("region,orders,revenue\n")
    for r, (n, v) in sorted(agg.items(), key=lambda kv: (-kv[1][1], kv[0])):
        f.write(f"{r},{n},{v:.2f}\n")
EOF
