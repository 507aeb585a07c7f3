import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

import hashlib

def grade():
    expected = load_json("expected.json")
    untouched = all(
        (lambda b: b is not None and hashlib.sha256(b).hexdigest() == h)(read_app(p, binary=True))
        for p, h in expected["keep"].items())
    fixed = {p: read_app(p, binary=True) == c.encode() for p, c in expected["fixed"].items()}
    n = sum(fixed.values())
    reward = n / len(fixed) if untouched else 0.0
    return reward, {"files_fixed": n, "files_total": len(fixed), "others_untouched": untouched}


main(grade)
