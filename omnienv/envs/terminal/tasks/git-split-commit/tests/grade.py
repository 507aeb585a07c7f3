import sys

sys.path.insert(0, "/tests")
from gitcheck import first_parent_chain, listing, message, meta, rev  # noqa: E402,F401
from verifylib import *  # noqa: E402,F403


def grade():
    exp = load_json("expected.json")
    commits = first_parent_chain("refs/heads/main")
    if not commits or len(commits) != 4 or commits[1] != exp["base"] or rev(f"{commits[3]}^{{tree}}") != exp["tree"]:
        return 0.0, {"structure": 0}
    first, second = commits[2], commits[3]
    parts = {"first_content": rev(f"{first}^{{tree}}") == exp["mid_tree"],
             "first_message": message(first) == "Add parser",
             "second_message": message(second) == "Update docs"}
    return fraction(parts), {"structure": 1, **parts}


main(grade)
