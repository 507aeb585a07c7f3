"""docs/catalog.md's Python example runs as written and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"


def test_the_python_example_runs() -> None:
    (example,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, str(DOC), "exec"), {})
    assert "PCCCCCCCCCCG" in out.getvalue() and "True -13.0" in out.getvalue()
