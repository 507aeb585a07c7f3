"""Grades a shell script with the command-line interface a task asks for: runs it on the cases of
the task's cases.json, each in a fresh folder, and compares exit codes, output digests and the
folder afterwards. Shared by the shell-scripting tasks (each links here from its tests/)."""

import json
import os
import sys

from verifylib import APP, digest, inside_app, load_json, run, scratch


def snapshot(root):
    out = {}
    for dp, dns, fns in os.walk(root):
        dns.sort()
        for fn in sorted(fns):
            p = os.path.join(dp, fn)
            rel = os.path.relpath(p, root)
            if os.path.islink(p) or not os.path.isfile(p):
                out[rel] = None
                continue
            with open(p, "rb") as f:
                out[rel] = f.read().decode("utf-8", "replace")
    return out


def run_case(i, case, script):
    base = os.path.join(scratch(), f"case{i}")
    work = os.path.join(base, case.get("dirname", "work"))
    os.makedirs(work)
    for rel, content in case.get("files", {}).items():
        p = os.path.join(work, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(content)
    for rel, mtime in case.get("mtimes", {}).items():
        os.utime(os.path.join(work, rel), (mtime, mtime))
    sub = lambda s: s.replace("{work}", work)
    r = run(["bash", script, *[sub(a) for a in case["args"]]], cwd=work, stdin=case.get("stdin"), timeout=10)
    ok = not r.timed_out
    if "stdout_sha256" in case:
        ok = ok and digest(r.out.replace(work, "{work}").rstrip("\n")) == case["stdout_sha256"]
    if "rc" in case:
        ok = ok and r.rc == case["rc"]
    if case.get("stderr"):
        ok = ok and r.err.strip() != ""
    if "after_sha256" in case:
        ok = ok and digest(json.dumps(snapshot(work), sort_keys=True)) == case["after_sha256"]
    if not ok:
        print(f"case {i} failed: {case.get('name')}: {r!r}", file=sys.stderr)
    return ok


def grade_script(name):
    cases = load_json("cases.json")
    script = os.path.join(APP, name)
    if not inside_app(script) or not os.path.isfile(script):
        return 0.0, {"script_exists": 0, "cases_passed": 0}
    results = [run_case(i, c, script) for i, c in enumerate(cases)]
    passed = sum(results)
    normal = sum(ok for ok, c in zip(results, cases) if c["rc"] == 0)
    # error-handling cases only count once the script does its job in at least one normal case
    reward = passed / len(cases) if normal else 0.0
    return reward, {"script_exists": 1, "cases_passed": passed, "cases_total": len(cases), "normal_cases_passed": normal}

