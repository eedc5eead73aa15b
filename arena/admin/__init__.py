"""The admin, one module per area; Django's autodiscovery imports this package."""

from arena.admin import battles, catalog, compare, evals, gold, prompts, raters, votes

__all__ = ["battles", "catalog", "compare", "evals", "gold", "prompts", "raters", "votes"]
