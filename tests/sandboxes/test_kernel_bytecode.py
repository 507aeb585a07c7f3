"""The kernel starts from read-only bytecode the host wrote: none is compiled again per kernel."""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
from pathlib import Path

from omnienv.sandboxes.jupyter.packages import BOOT_PACKAGES, closure, compile_bytecode, kernel_view


def test_missing_bytecode_is_written_once(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    source = tmp_path / "pkg" / "__init__.py"
    source.write_text("VALUE = 1\n")
    (tmp_path / "pkg" / "broken.py").write_text("def (:\n")  # compiled by nobody, and no error here
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    (info / "RECORD").write_text("pkg/__init__.py,,\npkg/broken.py,,\npkg-1.0.dist-info/METADATA,,\n")
    dists = {"pkg": metadata.PathDistribution(info)}

    assert compile_bytecode(dists) == 1
    assert Path(importlib.util.cache_from_source(str(source))).exists()
    assert compile_bytecode(dists) == 0  # up to date: nothing written again


def test_what_a_kernel_imports_at_boot_has_bytecode() -> None:
    kernel_view()  # writes what is missing
    sources = [
        Path(str(dist.locate_file(file)))
        for dist in closure(BOOT_PACKAGES).values()
        for file in dist.files or ()
        if file.suffix == ".py" and file.parts[0] != ".."
    ]
    assert sources
    missing = [s for s in sources if not Path(importlib.util.cache_from_source(str(s))).exists()]
    # the few a compiler refuses (templates, files for other Pythons) are the only ones left
    assert len(missing) <= len(sources) // 50, missing[:5]
