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
mkdir -p config
cat > README.md <<'EOF'
# Inventory service
A small HTTP service.
EOF
cat > app.py <<'EOF'
def handle(path):
    return {"/": "inventory"}.get(path, "not found")
EOF
cat > config/settings.toml <<'EOF'
[server]
workers = 2
EOF
git add README.md app.py config/settings.toml
commit "Initial project layout"
printf 'API_KEY=sk-live-4f9a2c7e1b8d4a6f9e3c5b7a1d2e4f60\nDB_PASSWORD=hunter2-prod\n' > config/secrets.env
cat > deploy.sh <<'EOF'
#!/bin/sh
. config/secrets.env
echo "deploying with key ${API_KEY%%????????????????????????????}..."
EOF
git add config/secrets.env deploy.sh
commit "Add deployment settings"
cat >> app.py <<'EOF'


def health():
    return "ok"
EOF
git add app.py
commit "Add health endpoint"
printf '\n## Deploying\nRun ./deploy.sh with config/secrets.env in place.\n' >> README.md
git add README.md
commit "Document deployment"
GIT_COMMITTER_DATE="$T +0000" git tag -a v1.0 -m "Release 1.0"
git checkout -q -b feature/metrics
cat >> app.py <<'EOF'


def metrics():
    return {"requests": 0}
EOF
git add app.py
commit "Add metrics endpoint"
git checkout -q main
printf '[server]\nworkers = 4\n' > config/settings.toml
printf 'API_KEY=sk-live-93b1e8d2c4a6f7e9b0d1c3e5a7f9b2d4\nDB_PASSWORD=hunter2-prod\n' > config/secrets.env
git add config/settings.toml config/secrets.env
commit "Tune worker count"
cat > test_app.py <<'EOF'
import unittest

import app


class AppTest(unittest.TestCase):
    def test_root(self):
        self.assertEqual(app.handle("/"), "inventory")
EOF
git add test_app.py
commit "Add tests"
