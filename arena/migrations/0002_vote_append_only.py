"""On PostgreSQL the vote log is append-only at the database level: UPDATE and DELETE raise.

The models refuse both as well (``Vote.save``/``Vote.delete``); the trigger also stops bulk
``QuerySet.update()``/``delete()`` and anything else that reaches the table. Other databases
(the embedded SQLite default) rely on the model guard alone.
"""

from django.db import migrations

UP = """
CREATE OR REPLACE FUNCTION arena_vote_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'arena_vote is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER arena_vote_no_update BEFORE UPDATE ON arena_vote
    FOR EACH ROW EXECUTE FUNCTION arena_vote_append_only();
CREATE TRIGGER arena_vote_no_delete BEFORE DELETE ON arena_vote
    FOR EACH ROW EXECUTE FUNCTION arena_vote_append_only();
"""
DOWN = """
DROP TRIGGER IF EXISTS arena_vote_no_update ON arena_vote;
DROP TRIGGER IF EXISTS arena_vote_no_delete ON arena_vote;
DROP FUNCTION IF EXISTS arena_vote_append_only();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UP, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DOWN, params=None)


class Migration(migrations.Migration):
    dependencies = [("arena", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
