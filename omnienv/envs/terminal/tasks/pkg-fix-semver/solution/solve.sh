#!/bin/bash
set -e
cd /app
cat > semver/version.py <<'PYEOF'
"""Semantic versions (https://semver.org, 2.0.0)."""
import functools
import re
_NUM = r"(0|[1-9]\d*)"
_ID = r"[0-9A-Za-z-]+"
_RE = re.compile(rf"^v?{_NUM}\.{_NUM}\.{_NUM}(?:-({_ID}(?:\.{_ID})*))?(?:\+({_ID}(?:\.{_ID})*))?$")


@functools.total_ordering
class Version:
    """MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD].

    parse() accepts an optional leading "v" and rejects numbers with leading zeros ("01.2.3")
    and empty identifiers, with ValueError. Ordering follows semver precedence: numbers compare
    numerically; a version with a prerelease is lower than the same version without one;
    prerelease identifiers compare one by one, numeric ones numerically and lower than
    alphanumeric ones, and a shorter list is lower when all of its identifiers are equal.
    Build metadata is ignored for ordering and equality (and hashing).
    """

    def __init__(self, major, minor, patch, prerelease=(), build=()):
        self.major, self.minor, self.patch = major, minor, patch
        self.prerelease, self.build = tuple(prerelease), tuple(build)

    @classmethod
    def parse(cls, text):
        m = _RE.match(text.strip())
        if not m:
            raise ValueError(f"not a version: {text!r}")
        pre = tuple(m.group(4).split(".")) if m.group(4) else ()
        build = tuple(m.group(5).split(".")) if m.group(5) else ()
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre, build)

    def __str__(self):
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            s += "-" + ".".join(self.prerelease)
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def _key(self):
        if not self.prerelease:
            pre = (1,)
        else:
            pre = (0, tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in self.prerelease))
        return (self.major, self.minor, self.patch, pre)

    def __eq__(self, other):
        return isinstance(other, Version) and self._key() == other._key()

    def __lt__(self, other):
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def bump(self, part):
        """The next version: "major" -> (M+1).0.0, "minor" -> M.(m+1).0, "patch" -> M.m.(p+1).

        The result has no prerelease and no build metadata; ValueError for another part.
        """
        if part == "major":
            return Version(self.major + 1, 0, 0)
        if part == "minor":
            return Version(self.major, self.minor + 1, 0)
        if part == "patch":
            return Version(self.major, self.minor, self.patch + 1)
        raise ValueError(part)


def max_satisfying(versions, spec):
    """The highest of `versions` (strings) matching `spec`, as a string, or None.

    spec is "^X.Y.Z" (>= X.Y.Z and < (X+1).0.0; when X is 0: < 0.(Y+1).0), "~X.Y.Z"
    (>= X.Y.Z and < X.(Y+1).0), ">=X.Y.Z", or an exact version. Versions with a prerelease
    never match a range (they match only an exact spec).
    """
    if spec.startswith("^"):
        lo = Version.parse(spec[1:])
        hi = Version(lo.major + 1, 0, 0) if lo.major > 0 else Version(0, lo.minor + 1, 0)
    elif spec.startswith("~"):
        lo = Version.parse(spec[1:])
        hi = Version(lo.major, lo.minor + 1, 0)
    elif spec.startswith(">="):
        lo, hi = Version.parse(spec[2:]), None
    else:
        exact = Version.parse(spec)
        found = [v for v in versions if Version.parse(v) == exact]
        return found[0] if found else None
    best = None
    for text in versions:
        v = Version.parse(text)
        if v.prerelease:
            continue
        if v >= lo and (hi is None or v < hi):
            if best is None or v > Version.parse(best):
                best = text
    return best
PYEOF
python3 -m unittest 2>&1 | tail -n 3
