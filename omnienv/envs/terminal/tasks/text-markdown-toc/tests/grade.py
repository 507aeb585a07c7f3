import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    expected = read_tests("expected.md")
    got = read_app("README.md")
    if got is None:
        return 0.0, {"exact_match": 0}
    ok = got.rstrip("\n") == expected.rstrip("\n")
    return float(ok), {"exact_match": ok}


main(grade)
