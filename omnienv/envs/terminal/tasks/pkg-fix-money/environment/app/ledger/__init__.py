from .money import format_amount, parse_amount, split, to_cents

__all__ = ["format_amount", "parse_amount", "split", "to_cents"]
