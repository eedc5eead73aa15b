"""The app's database role: it reads and writes rows, but cannot touch the vote log's guard."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from arena.records.models import Vote
from tests.helpers import calm_vote

pytestmark = pytest.mark.usefixtures("generation")


@pytest.fixture
def app_role(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("database roles need PostgreSQL (CI sets DATABASE_URL)")
    role = f"arena_app_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" LOGIN')
    yield role
    with connection.cursor() as cursor:
        cursor.execute(f'DROP OWNED BY "{role}"')
        cursor.execute(f'DROP ROLE "{role}"')


def as_role(role: str) -> psycopg.Connection:
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"], port=db["PORT"] or 5432, dbname=db["NAME"], user=role, autocommit=True
    )


def test_the_app_role_writes_rows_but_cannot_disable_the_guard_truncate_or_rewrite(
    app_role, alice, two_models
):
    vote = calm_vote(alice, "What is a monad?")
    call_command("grant_app_role", app_role)
    with as_role(app_role) as conn:
        assert conn.execute("SELECT count(*) FROM arena_vote").fetchone() == (1,)
        conn.execute("UPDATE arena_battle SET void_reason = void_reason")  # ordinary rows: yes
        for refused in [
            "ALTER TABLE arena_vote DISABLE TRIGGER ALL",
            "TRUNCATE arena_vote",
            "TRUNCATE arena_battle CASCADE",
            "UPDATE arena_vote SET choice = 'b'",
            "DELETE FROM arena_vote",
            "DROP TABLE arena_voteflag",
        ]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(refused)
    assert Vote.objects.get().choice == vote.choice


def test_granting_a_role_that_does_not_exist_says_so(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("database roles need PostgreSQL (CI sets DATABASE_URL)")
    with pytest.raises(CommandError, match="There is no role"):
        call_command("grant_app_role", "no_such_role_here")
