"""Isolation backends (Xvfb desktops, Jupyter kernels, E2B...); import the submodule you need.

Nothing is imported here, so that importing one backend never pulls in another's stack.
"""

__all__: list[str] = []
