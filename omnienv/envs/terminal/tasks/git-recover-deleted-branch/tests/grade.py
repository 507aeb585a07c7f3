import sys

sys.path.insert(0, "/tests")
from gitcheck import first_parent_chain, listing, message, meta, rev  # noqa: E402,F401
from verifylib import *  # noqa: E402,F403


def grade():
    exp = load_json("expected.json")
    restored = rev("refs/heads/feature/report") == exp["tip"]
    main_ok = rev("refs/heads/main") == exp["main"]
    reward = (1.0 if main_ok else 0.5) if restored else 0.0
    return reward, {"branch_restored": restored, "main_unchanged": main_ok}


main(grade)
