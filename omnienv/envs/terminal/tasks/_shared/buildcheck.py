"""What the build tasks' verifiers share: ``build`` (make, always from scratch) and
``run_cases`` (the built program on the task's cases, compared by exit code and output digest),
and ``grade_program``, the whole grade of a task that asks only for a working build.
Each build task links here from its tests/."""

import os
import sys

from verifylib import copy_app, digest, load_json, run


def build(work, *extra):
    return run(["make", "-B", *extra], cwd=work, timeout=40)


def run_cases(work, binary, cases):
    exe = os.path.join(work, binary)
    if not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        return 0
    passed = 0
    for i, c in enumerate(cases):
        r = run([exe, *c["args"]], cwd=work, stdin=c.get("stdin", ""), timeout=5)
        ok = not r.timed_out and digest(r.out) == c["stdout_sha256"] and r.rc == c["rc"]
        if not ok:
            print(f"case {i} failed: {r!r}", file=sys.stderr)
        passed += ok
    return passed


def grade_program(binary):
    cases = load_json("cases.json")
    work = copy_app("build")
    b = build(work)
    print(b.out[-2000:], b.err[-2000:], file=sys.stderr)
    passed = run_cases(work, binary, cases) if b.rc == 0 else 0
    parts = {"build": b.rc == 0, "cases_passed": passed, "cases_total": len(cases)}
    reward = passed / len(cases)
    return reward, parts

