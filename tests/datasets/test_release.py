from __future__ import annotations

import hashlib
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.images.selectors import image_records
from arena.images.services import image_store
from arena.integrity.models import VoteFlag
from arena.integrity.services import vote_flag
from tests.helpers import make_user
from tests.images.pictures import picture

# Personal data in prompts, follow-ups, system prompts and answers: none may reach the file.
SECRETS = {
    "email": "jane.doe@example.org",
    "phone": "+44 20 7946 0958",
    "ip_address": "10.20.30.40",
    "credit_card": "4111 1111 1111 1111",
    "street_address": "221B Baker Street",
}


def export_dataset(tmp_path, *args: str) -> tuple[list[dict], str, str]:
    out = io.StringIO()
    call_command("export_dataset", "--output", str(tmp_path / "d.jsonl"), *args, stdout=out)
    text = (tmp_path / "d.jsonl").read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    return rows, text, (tmp_path / "d.datasheet.md").read_text()


def test_no_personal_data_in_prompts_or_answers_reaches_the_file(make_vote, alice, tmp_path):
    s = SECRETS
    make_vote(
        alice, "a", prompt=f"My email is {s['email']}, card {s['credit_card']}. Help?",
        system_prompt=f"The user lives at {s['street_address']}, London NW1 6XE.",
        follow_ups=(f"Also my server {s['ip_address']} is down; call {s['phone']}",),
        answers_a=(f"I will write to {s['email']}.", f"Rebooting {s['ip_address']}."),
        answers_b=(f"Sure, calling {s['phone']} now.", f"Shipping to {s['street_address']}."),
    )  # fmt: skip
    rows, text, sheet = export_dataset(tmp_path)

    assert len(rows) == 1
    for secret in SECRETS.values():
        assert secret not in text and secret not in sheet
    for placeholder in ("[EMAIL]", "[PHONE]", "[IP_ADDRESS]", "[CREDIT_CARD]", "[ADDRESS]"):
        assert placeholder in text
    [row] = rows
    assert row["conversation_a"][2]["content"].startswith("Also my server [IP_ADDRESS] is down")
    # prompts / answers: the follow-up counted once, not once per side
    assert "- email `[EMAIL]`: 1 / 1" in sheet and "- phone `[PHONE]`: 1 / 1" in sheet


def test_no_rater_id_or_email_reaches_the_file_and_the_salt_is_not_written(
    make_vote, alice, settings, tmp_path
):
    settings.DATASET_SALT = "pepper-that-stays-secret"
    carol = make_user("carol.smith@example.net")
    for rater in (alice, alice, carol):
        make_vote(rater, "b", prompt=f"Question from {rater.pk}?")
    rows, text, sheet = export_dataset(tmp_path)

    for rater in (alice, carol):
        assert rater.email not in text and rater.email.split("@")[0] not in text
    assert "pepper-that-stays-secret" not in text + sheet
    assert "DATASET_SALT" in sheet
    pseudonyms = [r["rater"] for r in rows]
    assert pseudonyms[0] == pseudonyms[1] != pseudonyms[2]
    assert all(str(rater.pk) != p for p in pseudonyms for rater in (alice, carol))
    assert not {"rater_id", "email", "user"} & set(rows[0])
    # the same salt gives the same pseudonyms: releases can be joined
    again, _, _ = export_dataset(tmp_path)
    assert [r["rater"] for r in again] == pseudonyms


def test_without_a_salt_setting_each_export_draws_its_own(make_vote, alice, tmp_path):
    make_vote(alice, "a")
    first, _, sheet = export_dataset(tmp_path)
    second, _, _ = export_dataset(tmp_path)

    assert first[0]["rater"] != second[0]["rater"]
    assert "drawn for this run" in sheet


def test_flagged_votes_are_left_out_and_counted_per_reason(make_vote, alice, staff, tmp_path):
    kept = make_vote(alice, "tie", prompt="Kept?")
    vote_flag(vote=make_vote(alice, "a", prompt="Flagged?"), by=staff, reason=VoteFlag.Reason.ADMIN)
    rows, _, sheet = export_dataset(tmp_path)

    assert [r["battle_id"] for r in rows] == [str(kept.battle_id)]
    assert rows[0]["choice"] == "tie"
    assert "- admin: 1" in sheet and "Votes: 1 (tie 1)" in sheet


def test_image_files_are_released_only_when_the_raters_terms_allow_it(
    make_vote, alice, tmp_path, settings
):
    image = image_store(user=alice, data=picture("PNG"))
    make_vote(alice, "a", images=image_records([image]))
    rows, _, sheet = export_dataset(tmp_path)
    assert rows[0]["images"] == [
        {"sha256": image.sha256, "type": "image/png", "size": image.size_bytes}
    ]
    assert "- Images: hashes, types and sizes only" in sheet
    folder = tmp_path / "images"
    with pytest.raises(CommandError, match="DATASET_IMAGES=true"):
        export_dataset(tmp_path, "--include-images", str(folder))
    assert not folder.exists()

    settings.DATASET_IMAGES = True
    rows, _, sheet = export_dataset(tmp_path, "--include-images", str(folder))

    written = (folder / f"{image.sha256}.png").read_bytes()
    assert hashlib.sha256(written).hexdigest() == image.sha256
    assert "- Images: 1 file(s) beside the rows" in sheet
