"""Admin: evaluation runs, with their progress, and their judge leaderboard once done. Runs
are created with ``manage.py autoeval`` (``--background`` queues one on the workers)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from arena.admin.common import ReadOnly
from arena.evals import selectors
from arena.evals.models import EvalRun


@admin.register(EvalRun)
class EvalRunAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("name", "status", "progress_bar", "judge", "baseline", "created_at")
    list_filter = ("status",)
    list_select_related = ("judge", "baseline")
    readonly_fields = ("progress_bar", "judge_leaderboard")
    fields = ("name", "status", "note", "judge", "baseline", "budget", "max_judge_calls",
              "seed", "progress_bar", "judge_leaderboard")  # fmt: skip

    @admin.display(description="progress")
    def progress_bar(self, run: EvalRun) -> str:
        p = selectors.progress(run_id=run.pk)
        total = p.answers_total + 2 * (p.answers_total - run.prompts.count())
        done = p.answers_done + p.verdicts_done
        share = 100 * done // total if total else 100
        return format_html(
            '<progress max="100" value="{}"></progress> answers {}/{}, verdicts {} '
            "({} missing), cost ${}",
            share, p.answers_done, p.answers_total, p.verdicts_done, p.verdicts_missing,
            f"{p.cost:.4f}",
        )  # fmt: skip

    @admin.display(description="judge leaderboard (an LLM judge's opinion, not human votes)")
    def judge_leaderboard(self, run: EvalRun) -> str:
        if run.status not in (EvalRun.Status.DONE, EvalRun.Status.BUDGET):
            return "when the run is done"
        board = selectors.judge_board(run_id=run.pk, rounds=100)
        rows = sorted(board.board.rows, key=lambda r: -r.score)
        cells = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{}–{}</td></tr>",
            (
                (r.model, round(r.score), round(r.lower), round(r.upper), r.rank_best, r.rank_worst)
                for r in rows
            ),
        )
        return format_html(
            "<table>{}</table><p>position bias {}% over {} pairs; {} verdicts missing</p>",
            cells,
            round(100 * board.position_bias),
            board.pairs,
            board.missing,
        )
