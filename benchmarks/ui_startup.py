"""Start-up to healthy of ``omnienv serve wordle`` with the /ui pages on and with ``--no-ui``.

The pages are static files behind Starlette's StaticFiles, so turning them on must not slow
start-up (target: within 10%). Runs alternate on and off so machine noise hits both alike;
the ratio of medians is the number to read. Also times the first load of the page's files.

    python benchmarks/ui_startup.py [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import urllib.request

from _harness import ServerProcess, free_port
from rich.console import Console
from rich.table import Table

TARGET_RATIO = 1.10
PAGE_FILES = ("/ui/", "/ui/play.js", "/ui/form.js", "/ui/render.js", "/ui/style.css")


def start(ui: bool) -> tuple[float, float]:
    port = free_port()
    cmd = [sys.executable, "-m", "omnienv.cli.main", "serve", "wordle", "--port", str(port)]
    with ServerProcess("ui" if ui else "no-ui", [*cmd, "--ui" if ui else "--no-ui"], port=port) as server:
        page_s = float("nan")
        if ui:
            t0 = time.perf_counter()
            for path in PAGE_FILES:
                with urllib.request.urlopen(server.url + path, timeout=10) as reply:
                    reply.read()
            page_s = time.perf_counter() - t0
        return server.startup_s, page_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    on: list[float] = []
    off: list[float] = []
    pages: list[float] = []
    start(True)  # warm the file cache for both
    for _ in range(args.runs):
        startup, page = start(True)
        on.append(startup)
        pages.append(page)
        off.append(start(False)[0])
    on_s, off_s = statistics.median(on), statistics.median(off)
    ratio = on_s / off_s
    title = f"omnienv serve wordle: start-up to healthy, median of {args.runs}"
    table = Table("measure", "value", "target", "verdict", title=title)
    table.add_row("start-up, /ui on", f"{on_s * 1000:.0f} ms", "", "reported")
    table.add_row("start-up, --no-ui", f"{off_s * 1000:.0f} ms", "", "reported")
    verdict = "[green]met" if ratio <= TARGET_RATIO else "[red]missed"
    table.add_row("start-up on / off", f"{ratio:.3f}x", f"<= {TARGET_RATIO:.2f}x", verdict)
    page_ms = statistics.median(pages) * 1000
    table.add_row(f"first load of the play page's {len(PAGE_FILES)} files", f"{page_ms:.1f} ms", "", "reported")
    Console().print(table)


if __name__ == "__main__":
    main()
