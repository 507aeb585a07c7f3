"""Reference environments, one package each. Each depends on ``omnienv.core`` only."""
