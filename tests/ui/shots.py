"""Where page screenshots go (kept after the run, to look at): $OMNIENV_UI_SHOTS or a temp dir."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def shots_dir() -> Path:
    path = Path(os.environ.get("OMNIENV_UI_SHOTS") or Path(tempfile.gettempdir()) / "omnienv-ui-shots")
    path.mkdir(parents=True, exist_ok=True)
    return path
