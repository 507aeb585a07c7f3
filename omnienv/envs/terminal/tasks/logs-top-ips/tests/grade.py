import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    expected = read_tests("expected.txt").splitlines()
    got = read_app("top_ips.txt")
    if got is None:
        return 0.0, {"rows_correct": 0}
    lines = [l.rstrip("\r") for l in got.splitlines() if l.strip()]
    header_ok = bool(lines) and True
    body, exp_body = lines, expected
    correct = sum(1 for i, e in enumerate(exp_body) if i < len(body) and body[i] == e)
    reward = correct / max(len(exp_body), len(body)) * (1.0 if header_ok else 0.5)
    return reward, {"header_ok": header_ok, "rows_correct": correct, "rows_expected": len(exp_body)}


main(grade)
