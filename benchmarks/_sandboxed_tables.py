"""The tables of the sandboxed-environment benchmarks: one-session samples, the levels, and the one verdict table.

Every measure goes into one table, measure | value | target | verdict: ``meets`` or ``misses``
for a measure with a target, ``reported`` for one without (the target is "—"), ``reference`` for
a raw reference measured in the same run, next to the measure it is the reference of.
"""

from __future__ import annotations

from rich.table import Table

from benchmarks._harness import percentile
from benchmarks._proc import leftovers
from benchmarks._sandboxed import Level, session_count

__all__ = ["Verdicts", "add_cleanup_row", "add_ramp_rows", "levels_table", "samples_table", "stats"]


def stats(samples: list[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds of samples in seconds."""
    ordered = sorted(samples)
    return percentile(ordered, 50) * 1000, percentile(ordered, 99) * 1000


def samples_table(title: str, rows: list[tuple[str, list[float]]]) -> Table:
    """measurement | n | p50 | p99, in milliseconds, of each named list of samples in seconds."""
    table = Table(title=title)
    for column in ("measurement", "n", "p50", "p99"):
        table.add_column(column, justify="left" if column == "measurement" else "right")
    for name, samples in rows:
        p50, p99 = stats(samples)
        table.add_row(name, str(len(samples)), f"{p50:.2f}", f"{p99:.2f}")
    return table


def levels_table(
    run: list[Level], measured: list[int], unit: str, title: str, reference: tuple[str, list[Level]] | None = None
) -> Table:
    """Throughput and latency per level, against the 1-session numbers (and a reference's) of the same run."""
    caption = (
        "vs 1: over the same kind's 1-session rate; vs ref.: over the reference at the same N; "
        "min/sess.: steps the slowest session completed in the window; CPU: the whole machine busy in the "
        "window (other work on it included); host, sandboxes: CPU ms per step used by this process (the "
        "environments, the event loop, the clients) and by the sessions' own processes; (check): a ramp "
        "level, run briefly"
    )
    table = Table(title=title, caption=caption)
    columns = (
        "what",
        "sessions",
        f"{unit}/s",
        "vs 1",
        "vs ref.",
        "p50 ms",
        "p99 ms",
        "min/sess.",
        "CPU",
        "host",
        "sandboxes",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "what" else "right")
    ours = {level.sessions: level for level in run}
    theirs = {level.sessions: level for level in reference[1]} if reference else {}
    for sessions in sorted({*ours, *theirs}):
        for what, level in (("omnienv", ours.get(sessions)), (reference[0] if reference else "", theirs.get(sessions))):
            if level is None:
                continue
            runs = run if what == "omnienv" else theirs.values()
            one = next((other for other in runs if other.sessions == 1 and other.ok), None)
            ref = theirs.get(sessions) if what == "omnienv" else None
            ok = level.ok
            table.add_row(
                what if sessions in measured else f"{what} (check)",
                str(sessions),
                f"{level.rate:.0f}" if ok else "[red]failed",
                f"{level.rate / one.rate:.2f}x" if one and ok else "—",
                f"{level.rate / ref.rate:.2f}x" if ref and ref.ok and ok else "—",
                f"{level.p50:.2f}" if level.latencies_ms else "—",
                f"{level.p99:.2f}" if level.latencies_ms else "—",
                str(min(level.per_session)) if level.per_session else "—",
                f"{level.machine_busy:.0%}" if level.window_s else "—",
                f"{level.cpu_ms_per_step()[0]:.2f}" if level.latencies_ms else "—",
                f"{level.cpu_ms_per_step()[1]:.2f}" if level.latencies_ms else "—",
            )
    return table


class Verdicts:
    """The one table of a benchmark: measure | value | target | verdict."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def target(self, measure: str, value: float, limit: float, unit: str = "ms", note: str = "") -> None:
        """A measure with an upper bound: ``meets`` when ``value <= limit``."""
        verdict = "[green]meets" if value <= limit else "[red]misses"
        self.rows.append((measure, f"{value:.2f} {unit}{note}", f"<= {limit:g} {unit}", verdict))

    def report(self, measure: str, value: str, verdict: str = "reported") -> None:
        self.rows.append((measure, value, "—", verdict))

    def table(self, title: str) -> Table:
        table = Table("measure", "value", "target", "verdict", title=title)
        for measure, value, target, verdict in self.rows:
            table.add_row(measure, value, target, verdict)
        return table


def per_session_memory(level: Level) -> str:
    rss, pss = level.memory
    return f"{pss / level.sessions / 1024:.1f} MiB PSS ({rss / level.sessions / 1024:.1f} MiB RSS)"


def add_ramp_rows(
    verdicts: Verdicts,
    run: list[Level],
    held: int,
    measured: list[int],
    unit: str,
    cap: int,
    reference: tuple[str, list[Level]] | None = None,
    reference_memory: bool = True,
) -> None:
    """The throughput, memory and most-sessions rows that both benchmarks report the same way
    (``reference_memory=False`` when the reference's processes are ours: it runs on our sessions)."""
    one = next((level for level in run if level.sessions == 1 and level.ok), None)
    theirs = {level.sessions: level for level in reference[1] if level.ok} if reference else {}
    for level in run:
        if level.sessions not in measured:
            continue
        what = f"{unit}/s at {session_count(level.sessions)}"
        if not level.ok:
            verdicts.report(what, level.why()[:120], "[red]failed")
            continue
        ratio = f", {level.rate / one.rate:.2f}x 1 session" if one else ""
        ref = theirs.get(level.sessions)
        if reference and ref:
            ratio += f", {level.rate / ref.rate:.2f}x {reference[0]}"
        verdicts.report(what, f"{level.rate:.0f}/s{ratio}; p50 {level.p50:.2f} ms, p99 {level.p99:.2f} ms")
        if reference and ref:
            verdicts.report(
                f"  {reference[0]}, {session_count(level.sessions)}",
                f"{ref.rate:.0f}/s; p50 {ref.p50:.2f} ms, p99 {ref.p99:.2f} ms",
                "reference",
            )
    passed = [level for level in run if level.ok]
    if passed:
        top = passed[-1]
        verdicts.report(f"memory per session at {session_count(top.sessions)} (its processes)", per_session_memory(top))
        if reference and theirs and reference_memory:
            ref = theirs[max(theirs)]
            verdicts.report(f"  {reference[0]}, at {session_count(ref.sessions)}", per_session_memory(ref), "reference")
        # This process's growth, between two of our levels with the same company: the reference's
        # sessions, open up to the last measured level, live in this process too.
        alone = [level for level in passed if level.sessions > max(theirs, default=0)]
        base = alone[0] if len(alone) > 1 else (one if not theirs else None)
        if base is not None and top.sessions > base.sessions:
            more = top.sessions - base.sessions
            growth, in_use = (top.host_kb - base.host_kb) / more, (top.host_trimmed_kb - base.host_trimmed_kb) / more
            files = (top.host_fds - base.host_fds) / more
            verdicts.report(
                f"this process's growth per session ({base.sessions} to {top.sessions} sessions)",
                f"{growth / 1024:.2f} MiB RSS ({in_use / 1024:.2f} MiB once glibc returns its free heap), "
                f"{files:.1f} open files ({top.host_fds} at {top.sessions})",
            )
    failed = next((level for level in run if not level.ok), None)
    if failed is not None:
        detail = f"{failed.sessions} failed: {failed.why()[:150]}"
    else:
        detail = f"the cap, --max-sessions-cap {cap}; no failure up to it"
    verdicts.report("most concurrent sessions without a failure", f"{held} ({detail})")


def add_cleanup_row(verdicts: Verdicts, seen: set[int]) -> None:
    """Every process any session or pool had must be gone once the benchmark closed them."""
    left = leftovers(seen)
    verdict = "[green]meets" if not left else "[red]misses"
    verdicts.rows.append(
        (
            "processes left running after close",
            f"{len(left)} of {len(seen)} seen{f': {left[:8]}' if left else ''}",
            "0",
            verdict,
        )
    )
