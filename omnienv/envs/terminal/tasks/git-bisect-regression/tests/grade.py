import sys

sys.path.insert(0, "/tests")
from gitcheck import first_parent_chain, listing, message, meta, rev  # noqa: E402,F401
from verifylib import *  # noqa: E402,F403


def grade():
    exp = load_json("expected.json")
    tagged = rev("refs/tags/first-bad^{commit}") == exp["bad"]
    main_ok = rev("refs/heads/main") == exp["main"]
    reward = (1.0 if main_ok else 0.5) if tagged else 0.0
    return reward, {"tag_correct": tagged, "main_unchanged": main_ok}


main(grade)
