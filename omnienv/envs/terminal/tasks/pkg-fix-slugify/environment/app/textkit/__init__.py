from .slug import slugify
from .words import truncate_words

__all__ = ["slugify", "truncate_words"]
