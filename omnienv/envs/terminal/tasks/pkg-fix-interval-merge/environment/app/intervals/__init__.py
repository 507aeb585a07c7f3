from .core import gaps, merge, total_length

__all__ = ["gaps", "merge", "total_length"]
