"""Helpers for this task's verifier (grade.py).

Code from /app only ever runs in child processes, with outputs captured in private temporary
files; the grader compares what they produce against answers it holds itself. Files read from
/app must be regular files inside /app (a link out of it, to /tests say, reads as missing).
Every process started while grading is killed before the verdict is printed.

Where bubblewrap can nest (under omnienv, which sets OMNIENV_VERIFIER=1 and then requires it),
each child runs in a sandbox of its own inside the verifier's: its own process and user
namespaces, /tests and /logs hidden, /app read-only, and the /proc entry of every process of the
verifier's masked. The agent's code can then neither read the answers, nor write the reward,
nor signal, trace or open the files of the grader, test.sh or their pipes. Elsewhere (a Harbor
container, where the verifier shares the agent's machine anyway) children run as plain processes.
"""

import ctypes
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

APP = "/app"
TESTS = "/tests"
PATH = "/usr/local/bin:/usr/bin:/bin"
HIDDEN = ("/tests", "/logs")
REQUIRE_SANDBOX = os.environ.get("OMNIENV_VERIFIER") == "1"
_scratch = None
_nests = None
_probed = False


def scratch():
    """A private temporary directory for this run of the grader."""
    global _scratch
    if _scratch is None:
        _scratch = tempfile.mkdtemp(prefix="verify-")
    return _scratch


def _subreaper():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except Exception:
        return None


def reap():
    """Kill every process descended from the grader (daemons reparent to it: subreaper)."""
    me = os.getpid()
    for _ in range(10):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            pid, p, hops = int(name), int(name), 0
            while p and p > 1 and p != me and hops < 128:
                p, hops = _ppid(p), hops + 1
            if p == me:
                found = True
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        if not found:
            return
        time.sleep(0.02)


class Result:
    def __init__(self, rc, outb, errb, timed_out):
        self.rc, self.outb, self.errb, self.timed_out = rc, outb, errb, timed_out
        self.out = outb.decode("utf-8", "replace")
        self.err = errb.decode("utf-8", "replace")

    def __repr__(self):
        return f"Result(rc={self.rc}, out={self.out[:200]!r}, err={self.err[:200]!r})"


def _verifier_pids():
    """Every process and thread of the verifier's now (the grader, test.sh, their pipes' ends)."""
    found = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            found.add(name)
            try:
                found.update(os.listdir(f"/proc/{name}/task"))
            except OSError:
                pass
    return sorted(found, key=int)


def nesting_available():
    """The extra options of a nested sandbox here, or None where bubblewrap cannot nest; when the
    verifier requires it, raise if it cannot. Where bubblewrap can forbid it (0.8 on), the agent's
    code makes no user namespace of its own, in which it could mount what the host's kernel shows."""
    bwrap = shutil.which("bwrap", path=PATH)
    why = "bubblewrap is missing"
    if bwrap is not None:
        for extra in (["--disable-userns"], []):
            probe = subprocess.run([bwrap, "--unshare-all", "--unshare-user", *extra, "--dev-bind", "/", "/", "true"],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   env={"PATH": PATH}, timeout=30)
            if probe.returncode == 0:
                return extra
        why = f"bubblewrap cannot nest here: {probe.stderr.decode('utf-8', 'replace').strip()[:300]}"
    if REQUIRE_SANDBOX:
        raise RuntimeError(f"{why}; the grader will not run the agent's code unsandboxed")
    return None


def sandboxed(argv, cwd):
    """argv in a nested bubblewrap sandbox (see the module's docstring), or argv itself where
    bubblewrap is missing and the verifier does not require it."""
    global _nests, _probed
    if not _probed:
        _subreaper()  # what the probe leaves is then ours to reap, so no /proc entry below vanishes
        _nests, _probed = nesting_available(), True
        reap()
    if _nests is None:
        return list(argv)
    command = [shutil.which("bwrap", path=PATH), "--unshare-all", "--unshare-user", *_nests, "--die-with-parent",
               "--new-session", "--cap-drop", "ALL", "--dev-bind", "/", "/"]
    for path in HIDDEN:
        if os.path.isdir(path):
            command += ["--tmpfs", path]
    if os.path.isdir(APP):
        command += ["--ro-bind", APP, APP]
    for pid in _verifier_pids():
        command += ["--tmpfs", f"/proc/{pid}"]
    return [*command, "--chdir", cwd, "--", *argv]


def run(argv, cwd=APP, stdin=None, timeout=10, env=None, limit=1 << 20):
    """Run argv (never through a shell) with captured output; kill it and its descendants after."""
    home = os.path.join(scratch(), "home")
    os.makedirs(home, exist_ok=True)
    environment = {"PATH": PATH, "HOME": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    environment.update(env or {})
    with tempfile.TemporaryFile(dir=scratch()) as fo, tempfile.TemporaryFile(dir=scratch()) as fe, \
            tempfile.TemporaryFile(dir=scratch()) as fi:
        if stdin is not None:
            fi.write(stdin.encode() if isinstance(stdin, str) else stdin)
            fi.seek(0)
        timed_out = False
        try:
            p = subprocess.Popen(sandboxed(argv, cwd), cwd=cwd, stdin=fi, stdout=fo, stderr=fe,
                                 env=environment, start_new_session=True)
        except OSError as e:
            return Result(127, b"", str(e).encode(), False)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.kill()
            rc = p.wait()
        reap()
        fo.seek(0)
        fe.seek(0)
        return Result(rc, fo.read(limit), fe.read(limit), timed_out)


def inside_app(path):
    real = os.path.realpath(path)
    return real == APP or real.startswith(APP + "/")


def read_app(rel, binary=False, limit=5_000_000):
    """The content of /app/<rel>, or None if it is missing, not a regular file inside /app, or huge."""
    path = os.path.join(APP, rel)
    if not inside_app(path):
        return None
    real = os.path.realpath(path)
    try:
        if not os.path.isfile(real) or os.path.getsize(real) > limit:
            return None
        with open(real, "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    return data if binary else data.decode("utf-8", "replace")


def read_tests(rel, binary=False):
    with open(os.path.join(TESTS, rel), "rb") as f:
        data = f.read()
    return data if binary else data.decode("utf-8")


def load_json(rel):
    return json.loads(read_tests(rel))


def copy_app(dest_name="app"):
    """A private copy of /app (links copied as links) for building or running code in."""
    dest = os.path.join(scratch(), dest_name)
    try:
        shutil.copytree(APP, dest, symlinks=True, ignore_dangling_symlinks=True)
    except shutil.Error:
        pass
    except OSError:
        os.makedirs(dest, exist_ok=True)
    return dest


GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": "/dev/null", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0", "GIT_ATTR_NOSYSTEM": "1",
}


def git(*args, cwd=APP, timeout=10):
    """Run a (plumbing) git command on the repository in cwd; hooks and fsmonitor are disabled."""
    argv = ["git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
            "-c", "safe.directory=*", "-c", "log.showSignature=false", "-c", "gpg.program=false",
            "-c", "core.pager=cat", "--no-pager", *args]
    return run(argv, cwd=cwd, timeout=timeout, env=GIT_ENV)


def git_out(*args, cwd=APP):
    """stdout of a git command, stripped, or None if it failed."""
    r = git(*args, cwd=cwd)
    return r.out.strip() if r.rc == 0 else None


def digest(text):
    """sha256 of a string: answers to checks that run agent code are kept only as digests, since
    that code can read /tests while it runs."""
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def fraction(parts):
    """The mean of a dict of booleans (or numbers in [0, 1])."""
    return sum(float(v) for v in parts.values()) / len(parts) if parts else 0.0


def main(grade):
    """Run grade() -> (reward, {name: value}) and print the verdict as the last line of stdout."""
    _subreaper()
    try:
        reward, parts = grade()
    except Exception:
        traceback.print_exc()
        reward, parts = 0.0, {"error": 1}
    reap()
    reward = max(0.0, min(1.0, float(reward)))
    clean = {k: float(v) for k, v in parts.items() if isinstance(v, (bool, int, float)) and k != "reward"}
    print("parts:", parts, file=sys.stderr)
    sys.stdout.write(json.dumps({"reward": round(reward, 4), **clean}) + "\n")
    sys.stdout.flush()
    shutil.rmtree(scratch(), ignore_errors=True)
