"""Dialects: one module per foreign framework, each imported on its own.

Nothing is imported here, because each dialect pulls in its framework's package (gymnasium,
verifiers, skyrl-gym, gem-llm), which is an optional extra: import the module you need, e.g.
``from omnienv.dialects.gymnasium import GymnasiumEnv``.

In-process dialects wrap an environment: ``gymnasium``, ``verifiers``, ``skyrl_gym``, ``gem``.
``trl`` makes TRL's ``GRPOTrainer(environment_factory=...)`` class, in-process or over a server.
HTTP dialects are routers that ``omnienv.app.create_app`` mounts on every server: ``ors``
(ORS/OpenReward, REST + SSE) and ``nemo_gym`` (NeMo Gym resources server, signed cookie).
"""

__all__: list[str] = []
