import sys

sys.path.insert(0, "/tests")
from gitcheck import first_parent_chain, listing, message, meta, rev  # noqa: E402,F401
from verifylib import *  # noqa: E402,F403


def grade():
    exp = load_json("expected.json")
    head = rev("refs/heads/main")
    parents = git_out("rev-list", "--parents", "-n", "1", head) if head else None
    merged = parents is not None and parents.split()[1:] == [exp["main"], exp["feature"]]
    if not merged:
        return 0.0, {"merge_commit": 0}
    req = git("cat-file", "blob", f"{head}:requirements.txt")
    parts = {"requirements": req.rc == 0 and req.out.rstrip("\n") == exp["requirements"].rstrip("\n"),
             "tree_exact": rev(f"{head}^{{tree}}") == exp["tree"],
             "feature_unchanged": rev("refs/heads/feature") == exp["feature"]}
    return fraction(parts), {"merge_commit": 1, **parts}


main(grade)
