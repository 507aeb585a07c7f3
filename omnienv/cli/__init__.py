"""The ``omnienv`` command: thin Typer commands over library functions."""

__all__: list[str] = []
