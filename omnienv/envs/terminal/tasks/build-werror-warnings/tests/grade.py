import sys

sys.path.insert(0, "/tests")
from buildcheck import build, run_cases  # noqa: E402
from verifylib import *  # noqa: E402,F403

import os  # noqa: E402



def grade():
    cases = load_json("cases.json")
    work = copy_app("build")
    b = build(work)
    print(b.out[-2000:], b.err[-2000:], file=sys.stderr)
    passed = run_cases(work, 'histogram', cases) if b.rc == 0 else 0
    parts = {"build": b.rc == 0, "cases_passed": passed, "cases_total": len(cases)}
    reward = passed / len(cases)
    strict = all(run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-fsyntax-only", f], cwd=work).rc == 0
                 for f in ("main.c", "hist.c"))
    parts["warning_free"] = strict
    if not strict:
        reward *= 0.5
    return reward, parts


main(grade)
