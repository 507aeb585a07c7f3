#!/bin/bash
# Grades the workspace (/app) with /tests/grade.py, which runs code from /app only in child
# processes and compares with answers of its own; always writes /logs/verifier/reward.json.
mkdir -p /logs/verifier 2>/dev/null
cd /app 2>/dev/null || cd /
result=$(timeout -k 5 50 python3 -I /tests/grade.py 2>/logs/verifier/grade.log </dev/null | tail -n 1)
if ! printf '%s' "$result" | python3 -I -c 'import json, sys; r = json.load(sys.stdin)["reward"]; assert isinstance(r, (int, float)) and 0 <= r <= 1' 2>/dev/null; then
  result='{"reward": 0.0}'
fi
rm -rf /logs/verifier/reward.txt /logs/verifier/reward.json
printf '%s\n' "$result" > /logs/verifier/reward.json
