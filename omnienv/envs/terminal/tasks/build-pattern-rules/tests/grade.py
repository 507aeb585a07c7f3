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
    passed = run_cases(work, 'bin/wordfreq', cases) if b.rc == 0 else 0
    parts = {"build": b.rc == 0, "cases_passed": passed, "cases_total": len(cases)}
    reward = passed / len(cases)
    import shutil as _sh
    import time as _time
    work2 = copy_app("parallel")
    for d in ("build", "bin"):
        _sh.rmtree(os.path.join(work2, d), ignore_errors=True)
    b2 = run(["make", "-j4"], cwd=work2, timeout=40)
    parallel = b2.rc == 0 and run_cases(work2, "bin/wordfreq", cases) == len(cases)
    parts["parallel_clean_build"] = parallel
    rebuilt = False
    conf = os.path.join(work2, "include", "config.h")
    if parallel and os.path.isfile(conf) and not os.path.islink(conf):
        with open(conf) as f:
            text = f.read()
        with open(conf, "w") as f:
            f.write(text.replace('#define SEP " "', '#define SEP "\\t"'))
        future = _time.time() + 5
        os.utime(conf, (future, future))
        b3 = run(["make"], cwd=work2, timeout=40)
        rebuilt = b3.rc == 0 and run_cases(work2, "bin/wordfreq", load_json("tab_cases.json")) == 1
    parts["header_dependency"] = rebuilt
    reward = (reward + parallel + rebuilt) / 3
    return reward, parts


main(grade)
