"""Runs snippets against the package in a copy of /app; writes {id: result} as JSON.

Used only by grade.py, in a child process: its output is compared with the grader's answers.
"""
import json
import sys
from decimal import Decimal

cases_path, root, out_path = sys.argv[1:4]
with open(cases_path) as f:
    cases = json.load(f)
sys.path.insert(0, root)


def norm(v, depth=0):
    if depth > 20:
        return {"repr": "deep"}
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return {"float": repr(round(v, 9))}
    if isinstance(v, Decimal):
        return {"decimal": str(v)}
    if isinstance(v, (list, tuple)):
        return [norm(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {"dict": sorted([json.dumps(norm(k, depth + 1), sort_keys=True), norm(x, depth + 1)]
                               for k, x in v.items())}
    return {"repr": repr(v)[:200]}


results = {}
for case in cases:
    ns = {}
    try:
        exec(case["code"], ns)
        results[case["id"]] = {"value": norm(ns.get("result"))}
    except BaseException as e:  # noqa: B036 - SystemExit from agent code is a failure too
        results[case["id"]] = {"error": type(e).__name__}
with open(out_path, "w") as f:
    json.dump(results, f)
