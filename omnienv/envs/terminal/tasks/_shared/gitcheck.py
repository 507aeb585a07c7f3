"""What the git tasks' verifiers share: plumbing queries on the repository in /app (through
verifylib's git, with hooks, fsmonitor, replace refs and grafts off). Each git task links here."""

from verifylib import git_out


def rev(name):
    return git_out("rev-parse", "--verify", "--quiet", name)


def meta(commit):
    return git_out("log", "-1", "--format=%an|%ae|%at|%s", commit)


def message(commit):
    out = git_out("log", "-1", "--format=%B", commit)
    return None if out is None else out.strip()


def listing(commit):
    out = git_out("ls-tree", "-r", commit)
    return None if out is None else out.splitlines()


def first_parent_chain(ref):
    out = git_out("rev-list", "--first-parent", "--reverse", ref)
    return None if out is None else out.split()
