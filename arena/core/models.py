"""What the event logs' models share: rows are written once, never changed or deleted."""

from __future__ import annotations

from django.db import models

from arena.core.errors import AppendOnlyError


class AppendOnlyModel(models.Model):
    """A row of an append-only log; on PostgreSQL a trigger refuses UPDATE and DELETE too.
    ``rows`` names the rows in messages; ``changed`` ends the message refusing a change."""

    rows = "Rows"
    changed = " and cannot be changed"

    class Meta:
        abstract = True

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise AppendOnlyError(f"{self.rows} are append-only{self.changed}.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError(f"{self.rows} are append-only and cannot be deleted.")


def model_update(*, instance: models.Model, fields: list[str], data: dict) -> None:
    """Set ``fields`` of ``instance`` from ``data`` and save just those."""
    for name in fields:
        setattr(instance, name, data[name])
    instance.save(update_fields=fields)
