import sys

sys.path.insert(0, "/tests")
from gitcheck import first_parent_chain, listing, message, meta, rev  # noqa: E402,F401
from verifylib import *  # noqa: E402,F403


def grade():
    exp = load_json("expected.json")
    if rev("HEAD") is None:
        return 0.0, {"repository": 0}
    objects = git("cat-file", "--batch-all-objects", "--batch", timeout=20)
    data = objects.outb if objects.rc == 0 else b""
    for root, _, files in os.walk(os.path.join(APP, ".git")):
        for f in files:
            try:
                with open(os.path.join(root, f), "rb") as fh:
                    data += fh.read(1 << 20)
            except OSError:
                pass
    clean = objects.rc == 0 and not any(s.encode() in data for s in exp["secrets"])
    def same(ref, key):
        commits = first_parent_chain(ref)
        if commits is None or len(commits) != len(exp[key]):
            return False, commits
        return all(meta(c) == e["meta"] and listing(c) == e["listing"] for c, e in zip(commits, exp[key])), commits
    main_ok, main_commits = same("refs/heads/main", "main")
    feat_ok, feat_commits = same("refs/heads/feature/metrics", "feature")
    shared = bool(main_commits and feat_commits and len(main_commits) > 3 and feat_commits[3] == main_commits[3])
    tag_ok = bool(main_commits) and len(main_commits) > 3 and rev("refs/tags/v1.0^{commit}") == main_commits[3] \
        and git_out("cat-file", "-t", "refs/tags/v1.0") == "tag"
    parts = {"main_history": main_ok, "feature_history": feat_ok and shared, "tag": tag_ok}
    reward = fraction(parts) if clean else 0.0
    return reward, {"secret_gone": clean, **parts}


main(grade)
