"""leaderboard.csv is data: a model name or organisation written as a formula opens in a
spreadsheet as text, and the numbers stay numbers."""

from __future__ import annotations

import csv
import io

from django.utils import timezone

from ranking.models import LeaderboardRow, LeaderboardSnapshot

HYPERLINK = '=HYPERLINK("http://x","click")'


def test_names_and_organisations_that_look_like_formulas_come_out_quoted(client, db):
    snapshot = LeaderboardSnapshot.objects.create(
        cutoff=timezone.now(), method="bootstrap", settings={}, votes_used=10, content_hash="x"
    )
    LeaderboardRow.objects.create(
        snapshot=snapshot, view="raw", breakdown="category:@SUM(1+1)", model_name=HYPERLINK,
        organisation="+cmd|' /C calc'!A0", section="ranked", score=-0.5, lower=-1.25, upper=0.25,
        rank_best=1, rank_worst=1, votes=10,
    )  # fmt: skip
    response = client.get(f"/leaderboard/{snapshot.pk}.csv")
    header, row = list(csv.reader(io.StringIO(response.content.decode())))
    got = dict(zip(header, row, strict=True))
    assert got["model_name"] == "'" + HYPERLINK
    assert got["organisation"] == "'+cmd|' /C calc'!A0"
    assert got["breakdown"] == "category:@SUM(1+1)"  # not at the start: no formula
    assert (got["score"], got["lower"], got["upper"]) == ("-0.5", "-1.25", "0.25")
    assert got["votes"] == "10" and got["snapshot"] == str(snapshot.pk)
