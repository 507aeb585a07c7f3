from .version import Version, max_satisfying

__all__ = ["Version", "max_satisfying"]
