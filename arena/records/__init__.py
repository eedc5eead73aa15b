"""The arena's records: prompts, battles with their turns and answers, gold items and the
append-only vote log. A room of their own, below battles (whose services write them), so that
the rooms that read them (integrity, tagging, ranking, datasets) need nothing of battles' code."""
