import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    expected = read_tests("expected.txt")
    got = read_app("unique.txt")
    if got is None:
        return 0.0, {"file_exists": 0}
    ok = got == expected or got == expected.rstrip("\n")
    return float(ok), {"file_exists": 1, "exact_match": ok}


main(grade)
