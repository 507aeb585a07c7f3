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
    passed = run_cases(work, 'tstat', cases) if b.rc == 0 else 0
    parts = {"build": b.rc == 0, "cases_passed": passed, "cases_total": len(cases)}
    reward = passed / len(cases)
    members = run(["ar", "t", os.path.join(work, "libtextstat.a")], cwd=work)
    names = set(os.path.basename(m) for m in members.out.split())
    parts["library"] = b.rc == 0 and members.rc == 0 and {"words.o", "lines.o"} <= names
    prefix = os.path.join(scratch(), "staging", "usr")
    inst = run(["make", "install", f"PREFIX={prefix}"], cwd=work, timeout=30)
    installed = inst.rc == 0 and all(os.path.isfile(os.path.join(prefix, p)) for p in
                                     ("bin/tstat", "lib/libtextstat.a", "include/textstat.h"))
    if installed:
        r = run([os.path.join(prefix, "bin", "tstat")], cwd=work, stdin=cases[0]["stdin"], timeout=5)
        installed = digest(r.out) == cases[0]["stdout_sha256"]
    parts["install"] = installed
    reward = (reward + parts["library"] + installed) / 3
    return reward, parts


main(grade)
