"""Token-exact capture of model calls, and the training records trainers read.

:class:`ModelCall`, the records (:class:`TrainingRecord`) and their exporters (OpenEnv's
TrainingTrace, ATIF, TRL's ``rollout_func`` rows) need nothing beyond the core; the proxy (:class:`CaptureProxy`,
:func:`create_proxy_app`) needs the ``server`` extra and is imported on first use, so reading
records does not load the network stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from omnienv.capture.calls import ModelCall
from omnienv.capture.exporters import (
    ATIF_SCHEMA_VERSION,
    OPENENV_TRACE_SCHEMA_VERSION,
    to_atif,
    to_openenv_trace,
    to_trl_rollout,
)
from omnienv.capture.log import CallLog
from omnienv.capture.records import (
    EpisodeLike,
    TokenSegment,
    TrainingRecord,
    build_segments,
    iter_records,
    read_records,
    write_records,
)

if TYPE_CHECKING:
    from omnienv.capture.proxy import EPISODE_HEADER, CaptureProxy, create_proxy_app

__all__ = [
    "ATIF_SCHEMA_VERSION",
    "EPISODE_HEADER",
    "OPENENV_TRACE_SCHEMA_VERSION",
    "CallLog",
    "CaptureProxy",
    "EpisodeLike",
    "ModelCall",
    "TokenSegment",
    "TrainingRecord",
    "build_segments",
    "create_proxy_app",
    "iter_records",
    "read_records",
    "to_atif",
    "to_openenv_trace",
    "to_trl_rollout",
    "write_records",
]

_PROXY = frozenset({"EPISODE_HEADER", "CaptureProxy", "create_proxy_app"})


def __getattr__(name: str) -> Any:
    if name in _PROXY:
        from omnienv.capture import proxy

        return getattr(proxy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
