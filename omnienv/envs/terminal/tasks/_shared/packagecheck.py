"""Grades a repaired Python package: the task's hidden cases (run by probe.py in copies of /app,
compared by digest) and its visible unittest suite, which must run all its tests (``visible``) and pass.
Shared by the package tasks (each links here from its tests/).

The visible suite's verdict is the package's own word: the suite runs in the package's process,
which could print any summary and exit 0. So it counts only once every hidden group passes, where
faking it gains nothing."""

from verifylib import *  # noqa: F403

import os
import re
import shutil


def run_group(name, cases):
    work = copy_app(f"group-{name}")
    cases_path = os.path.join(scratch(), f"cases-{name}.json")
    out_path = os.path.join(scratch(), f"out-{name}.json")
    with open(cases_path, "w") as f:
        json.dump(cases, f)
    probe = os.path.join(scratch(), "probe.py")  # /tests is out of the child's sight
    shutil.copyfile("/tests/probe.py", probe)
    run(["python3", "-I", probe, cases_path, work, out_path], cwd=work, timeout=10)
    try:
        with open(out_path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def visible_tests_pass(visible):
    work = copy_app("visible")
    tests = os.path.join(work, "tests")
    shutil.rmtree(tests, ignore_errors=True)
    if os.path.lexists(tests):
        os.remove(tests)
    shutil.copytree("/tests/visible", tests)
    r = run(["python3", "-I", "-m", "unittest", "discover", "-s", "tests", "-t", "."], cwd=work, timeout=20)
    m = re.search(r"^Ran (\d+) tests? in", r.err, re.M)
    return r.rc == 0 and m is not None and int(m.group(1)) == visible and re.search(r"^OK", r.err, re.M) is not None


def grade_package(visible):
    cases = load_json("cases.json")
    expected = load_json("expected.json")
    parts = {}
    for group, items in cases.items():
        got = run_group(group, items)
        parts[group] = all(digest(json.dumps(got.get(c["id"]), sort_keys=True)) == expected[c["id"]] for c in items)
    parts["visible_tests"] = all(parts.values()) and visible_tests_pass(visible)
    passed = sum(parts.values())
    return passed / len(parts), {**parts, "checks_passed": passed, "checks_total": len(parts)}

