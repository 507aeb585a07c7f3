import sys

sys.path.insert(0, "/tests")
from gitcheck import first_parent_chain, listing, message, meta, rev  # noqa: E402,F401
from verifylib import *  # noqa: E402,F403


def grade():
    exp = load_json("expected.json")
    tip = rev("refs/heads/release-1.x")
    parents = git_out("rev-list", "--parents", "-n", "1", tip) if tip else None
    one_new = parents is not None and parents.split()[1:] == [exp["release"]]
    tree = tip is not None and rev(f"{tip}^{{tree}}") == exp["tree"]
    if not (one_new and tree):
        return 0.0, {"one_new_commit": one_new, "tree_correct": tree}
    parts = {"one_new_commit": True, "tree_correct": True,
             "develop_unchanged": rev("refs/heads/develop") == exp["develop"],
             "message_kept": (message(tip) or "").splitlines()[:1] == ["Fix off-by-one in paginate()"]}
    return fraction(parts), parts


main(grade)
