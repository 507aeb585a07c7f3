"""The task families, grouped by the kind of work they ask for; :mod:`..tasks` turns them into tasks.

- :mod:`.tables`: filters, group-bys, pivots, weighted means, top-k and histograms over one file;
- :mod:`.joins`: joins across files, set operations, latest versions of records, hierarchies;
- :mod:`.timeseries`: resampling, rolling windows, gaps, sessions, running balances, calendars;
- :mod:`.dirty`: inconsistent text, mixed date and number formats, units, gaps to fill;
- :mod:`.stats`: correlation, regression, z-scores, medians, percentiles, ranks, shares;
- :mod:`.text_logs`: application and web logs, key=value lines, nested JSON, prose;
- :mod:`.algorithms`: the algorithmic minority (primes, shortest paths, dynamic programming).
"""

from omnienv.envs.jupyter.families import algorithms, dirty, joins, stats, tables, text_logs, timeseries
from omnienv.envs.jupyter.families.common import Built, Family, Solution

__all__ = ["ALL", "Built", "Family", "Solution"]

ALL: tuple[Family, ...] = (
    *tables.FAMILIES,
    *joins.FAMILIES,
    *timeseries.FAMILIES,
    *dirty.FAMILIES,
    *stats.FAMILIES,
    *text_logs.FAMILIES,
    *algorithms.FAMILIES,
)
"""Every family, data analysis first; the order fixes the order of the task list."""
