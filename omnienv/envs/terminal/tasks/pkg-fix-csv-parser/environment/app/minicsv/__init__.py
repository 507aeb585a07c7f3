from .parser import format_row, parse, to_dicts

__all__ = ["format_row", "parse", "to_dicts"]
