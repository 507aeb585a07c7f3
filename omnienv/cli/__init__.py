"""The ``omnienv`` command: thin Typer commands over library functions."""
