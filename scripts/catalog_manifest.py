"""Write (or check) omnienv/catalog/manifest.json from the libraries installed in this Python.

Run it once in each source library's own virtualenv; it replaces only the sections of the sources
whose library imports here and keeps the others::

    .venv/bin/python scripts/catalog_manifest.py --source gymnasium
    .venvs/reasoning_gym/bin/python scripts/catalog_manifest.py --source reasoning-gym
    .venvs/gem/bin/python scripts/catalog_manifest.py --source gem
    .venvs/textarena/bin/python scripts/catalog_manifest.py --source textarena

A source is named explicitly because one virtualenv may hold another source's library at another
version (gem-llm pins its own reasoning-gym).

Writing starts every candidate environment once (offline) and leaves out, with the reason, those
that cannot start; ``--check`` compares without starting any and exits 1 on a difference.
"""

from __future__ import annotations

import argparse
import sys

from omnienv.catalog import SOURCES
from omnienv.catalog.build import available_sources, check_source, live_section, write_sections


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--source",
        action="append",
        required=True,
        choices=sorted(SOURCES),
        help="the source to write or check (repeatable)",
    )
    parser.add_argument("--check", action="store_true", help="compare with the live library instead of writing")
    args = parser.parse_args()
    available = available_sources()
    chosen: list[str] = args.source
    for name in chosen:
        if available[name] is not None:
            print(f"{name}: {available[name]}", file=sys.stderr)
            return 2
    if args.check:
        problems = [problem for name in chosen for problem in check_source(name)]
        print("\n".join(problems) or f"manifest matches the live libraries: {', '.join(chosen)}")
        return 1 if problems else 0
    sections = {}
    for name in chosen:
        print(f"{name}: probing...", file=sys.stderr)
        sections[name] = live_section(name, log=lambda line: print(line, file=sys.stderr))
        kept, left = len(sections[name]["environments"]), len(sections[name]["excluded"])
        print(f"{name} {sections[name]['version']}: {kept} environments, {left} left out", file=sys.stderr)
    print(f"wrote {write_sections(sections)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
