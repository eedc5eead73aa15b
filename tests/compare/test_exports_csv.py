"""A compare run's CSV is data: a model name or answer written as a formula comes out quoted."""

from __future__ import annotations

import csv
import io

import pytest
from channels.db import database_sync_to_async

from arena.catalog.models import ModelEntry
from arena.compare import exports, services

pytestmark = pytest.mark.usefixtures("transactional_db")
HYPERLINK = '=HYPERLINK("http://x","click")'


def mock_model(name: str, model_id: str, **mock) -> ModelEntry:
    return ModelEntry.objects.create(
        public_name=name, model_id=model_id, backend=ModelEntry.Backend.MOCK,
        backend_settings={"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 10, **mock},
        supported_params=[],
    )  # fmt: skip


async def test_model_names_and_answers_that_look_like_formulas_come_out_quoted(staff):
    make = database_sync_to_async(mock_model)
    models = [await make(HYPERLINK, "formula-1"), await make("Plain", "plain-1", prefix="@SUM(9)")]
    created = await database_sync_to_async(services.compare_start)(
        user=staff, prompt="Say something.", model_ids=[m.pk for m in models]
    )
    done = await services.compare_execute(created.pk)
    rows = list(csv.DictReader(io.StringIO(await database_sync_to_async(exports.as_csv)(done))))
    by_model = {row["model"]: row for row in rows}
    assert set(by_model) == {"'" + HYPERLINK, "Plain"}
    assert by_model["Plain"]["text"].startswith("'@SUM(9)")
    assert not by_model["'" + HYPERLINK]["text"].startswith("'")  # ordinary text is untouched
    assert all(float(row["ttft_ms"]) >= 0 and row["status"] == "ok" for row in rows)  # numbers
