import sys

sys.path.insert(0, "/tests")
from gitcheck import first_parent_chain, listing, message, meta, rev  # noqa: E402,F401
from verifylib import *  # noqa: E402,F403


def grade():
    exp = load_json("expected.json")
    commits = first_parent_chain("refs/heads/main")
    if not commits or len(commits) != 6 or commits[2] != exp["base"]:
        return 0.0, {"base_unchanged": 0}
    top = commits[3:]
    trees = all(rev(f"{c}^{{tree}}") == t for c, t in zip(top, exp["trees"]))
    authors = all(git_out("log", "-1", "--format=%an|%ae|%at", c) == a for c, a in zip(top, exp["authors"]))
    linear = all(git_out("rev-list", "--parents", "-n", "1", c).split()[1:] == [p] for p, c in zip(commits[2:5], top))
    msgs = {f"message_{i + 1}": message(c) == m for i, (c, m) in enumerate(zip(top, exp["messages"]))}
    reward = fraction(msgs) if trees and authors and linear else 0.0
    return reward, {"base_unchanged": 1, "trees_unchanged": trees, "authors_unchanged": authors, **msgs}


main(grade)
