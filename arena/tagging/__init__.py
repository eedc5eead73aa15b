"""Tagging: what each voted prompt is about (its tags) and what language it is in."""
