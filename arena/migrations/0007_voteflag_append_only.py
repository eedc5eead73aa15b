"""Flags are append-only like votes: on PostgreSQL a trigger refuses UPDATE and DELETE, so no
bulk query can quietly un-flag a vote (a review is a new row)."""

from django.db import migrations

UP = """
CREATE OR REPLACE FUNCTION arena_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER arena_voteflag_no_update BEFORE UPDATE ON arena_voteflag
    FOR EACH ROW EXECUTE FUNCTION arena_append_only();
CREATE TRIGGER arena_voteflag_no_delete BEFORE DELETE ON arena_voteflag
    FOR EACH ROW EXECUTE FUNCTION arena_append_only();
"""
DOWN = """
DROP TRIGGER IF EXISTS arena_voteflag_no_update ON arena_voteflag;
DROP TRIGGER IF EXISTS arena_voteflag_no_delete ON arena_voteflag;
DROP FUNCTION IF EXISTS arena_append_only();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UP, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DOWN, params=None)


class Migration(migrations.Migration):
    dependencies = [("arena", "0006_integrity")]
    operations = [migrations.RunPython(forwards, backwards)]
