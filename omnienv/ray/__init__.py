"""Scale out on Ray: sessions hosted by Ray actors across a cluster.

- ``omnienv serve ENV --ray [ADDRESS]`` (or :func:`omnienv.ray.serving.ray_app`): the usual
  server, with every session's environment on a host actor, least loaded first.
- :class:`EnvPool`: a batch of environments for trainers that use Ray directly.

Each actor hosts many sessions; the actors are spread over the cluster's nodes. An actor that
dies (or its node) fails only its own sessions, with :class:`~omnienv.core.WorkerLostError` and
the failure flag; it is replaced at once, and new sessions go to live actors. Needs the ``ray``
extra (``pip install 'omnienv[ray]'``); the front server also needs the ``server`` extra.
"""

from omnienv.ray.cluster import connect, disconnect
from omnienv.ray.host import EnvHost
from omnienv.ray.placement import Host, HostPool
from omnienv.ray.pool import EnvPool
from omnienv.ray.remote import RemoteEnv, remote_env_factory

__all__ = [
    "EnvHost",
    "EnvPool",
    "Host",
    "HostPool",
    "RemoteEnv",
    "connect",
    "disconnect",
    "remote_env_factory",
]
