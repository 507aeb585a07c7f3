import sys

sys.path.insert(0, "/tests")
from gitcheck import first_parent_chain, listing, message, meta, rev  # noqa: E402,F401
from verifylib import *  # noqa: E402,F403


def grade():
    exp = load_json("expected.json")
    head = rev("refs/heads/main")
    if head is None:
        return 0.0, {"squashed": 0}
    parents = git_out("rev-list", "--parents", "-n", "1", head)
    squashed = parents is not None and parents.split()[1:] == [exp["base"]] and rev(f"{head}^{{tree}}") == exp["tree"]
    msg = message(head) == "Add search feature"
    reward = (0.5 + 0.5 * msg) if squashed else 0.0
    return reward, {"squashed": squashed, "message": msg}


main(grade)
