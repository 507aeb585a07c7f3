"""A dialect whose framework is missing says which extra to install."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("module", "package", "extra"),
    [
        ("omnienv.dialects.skyrl_gym", "skyrl_gym", "skyrl"),
        ("omnienv.dialects.gem", "gem", "gem"),
        ("omnienv.dialects.verifiers", "verifiers", "verifiers"),
    ],
)
def test_missing_framework_names_the_extra(module: str, package: str, extra: str) -> None:
    if importlib.util.find_spec(package) is not None:
        pytest.skip(f"{package} is installed here; its own virtualenv tests the dialect")
    with pytest.raises(ImportError, match=rf"pip install 'omnienv\[{extra}\]'"):
        importlib.import_module(module)


def test_the_dialects_package_imports_no_framework() -> None:
    code = "import sys, omnienv.dialects; print([m for m in ('gymnasium', 'verifiers', 'gem') if m in sys.modules])"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
