#!/bin/bash
# Builds this task's git history with fixed identities and dates (run once at setup).
set -e
git init -q -b main
git config commit.gpgsign false
export GIT_AUTHOR_NAME="Dana Lee" GIT_AUTHOR_EMAIL="dana@example.com"
export GIT_COMMITTER_NAME="Dana Lee" GIT_COMMITTER_EMAIL="dana@example.com"
T=1709251200
commit() {
  T=$((T + 5400))
  GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git commit -q -m "$1"
}
as() {  # as NAME EMAIL: switch the author for the following commits
  export GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2"
}
mkdir -p tests
cat > stats.py <<'EOF'
def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2
EOF
cat > tests/check.sh <<'EOF'
#!/bin/sh
# exits 0 when the statistics are right
cd "$(dirname "$0")/.." && python3 -c '
from stats import median, mean
assert median([3, 1, 2]) == 2
assert median([4, 1, 3, 2]) == 2.5
assert mean([1, 2, 3]) == 2
'
EOF
chmod +x tests/check.sh
git add stats.py tests/check.sh
commit "Add mean and median"
cat >> stats.py <<'EOF'


def mode(xs):
    return max(set(xs), key=xs.count)
EOF
git add stats.py
commit "Add mode()"
printf '%s\n' 'Document functions' >> NOTES.txt && git add NOTES.txt
git add stats.py
commit "Document functions"
cat >> stats.py <<'EOF'


def variance(xs):
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)
EOF
git add stats.py
commit "Add variance()"
printf '%s\n' 'Tidy imports' >> NOTES.txt && git add NOTES.txt
git add stats.py
commit "Tidy imports"
cat >> stats.py <<'EOF'


def stdev(xs):
    return variance(xs) ** 0.5
EOF
git add stats.py
commit "Add stdev()"
sed -i 's/    return sum(xs) \/ len(xs)/    return sum(xs) \/ float(len(xs))/' stats.py
git add stats.py
commit "Speed up mean"
cat >> stats.py <<'EOF'


def range_(xs):
    return max(xs) - min(xs)
EOF
git add stats.py
commit "Add range_()"
printf '%s\n' 'Rename internal helper' >> NOTES.txt && git add NOTES.txt
git add stats.py
commit "Rename internal helper"
cat >> stats.py <<'EOF'


def percentile(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]
EOF
git add stats.py
commit "Add percentile()"
sed -i 's/    s = sorted(xs)$/    s = list(xs)/' stats.py
git add stats.py
commit "Small cleanups"
cat >> stats.py <<'EOF'


def zscore(x, xs):
    return (x - mean(xs)) / stdev(xs)
EOF
git add stats.py
commit "Add zscore()"
printf '%s\n' 'Update docs' >> NOTES.txt && git add NOTES.txt
git add stats.py
commit "Update docs"
cat >> stats.py <<'EOF'


def clamp(x, lo, hi):
    return max(lo, min(hi, x))
EOF
git add stats.py
commit "Add clamp()"
sed -i 's/    return sum((x - m) \*\* 2 for x in xs) \/ len(xs)/    return sum((x - m) * (x - m) for x in xs) \/ len(xs)/' stats.py
git add stats.py
commit "Refactor variance"
cat >> stats.py <<'EOF'


def histogram(xs):
    out = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out
EOF
git add stats.py
commit "Add histogram()"
sed -i 's/    return max(set(xs), key=xs.count)/    return max(set(xs), key=xs.count) if xs else None/' stats.py
git add stats.py
commit "Handle empty input in mode"
cat >> stats.py <<'EOF'


def summary(xs):
    return {"mean": mean(xs), "median": median(xs)}
EOF
git add stats.py
commit "Add summary()"
printf '%s\n' 'Reformat' >> NOTES.txt && git add NOTES.txt
git add stats.py
commit "Reformat"
cat >> stats.py <<'EOF'


def iqr(xs):
    return percentile(xs, 75) - percentile(xs, 25)
EOF
git add stats.py
commit "Add iqr()"
