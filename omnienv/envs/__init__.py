"""Reference environments, one package each. Each depends on ``omnienv.core`` only."""

__all__: list[str] = []
