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
mkdir -p src tests
printf '# notes-cli\nTake notes from the terminal.\n' > README.md
git add README.md
commit "Initial commit"
cat > src/cli.py <<'EOF'
import sys


def main(argv):
    if len(argv) < 1:
        print("usage: notes TEXT")
        return 2
    print("noted:", " ".join(argv))
    return 0
EOF
git add src/cli.py
commit "Add command-line entry point"
printf 'MIT License\n' > LICENSE
git add LICENSE
commit "Add license"
printf '# Contributing\nOpen an issue first.\n' > CONTRIBUTING.md
git add CONTRIBUTING.md
as "Sam Ortiz" "sam@example.com"
commit "wip"
sed -i 's/len(argv) < 1/not argv/' src/cli.py
git add src/cli.py
commit "fix stuff"
cat > tests/test_cli.py <<'EOF'
import unittest


class CliTest(unittest.TestCase):
    def test_nothing(self):
        self.assertTrue(True)
EOF
git add tests/test_cli.py
commit "asdf"
