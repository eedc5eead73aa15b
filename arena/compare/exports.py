"""A saved run as JSON, CSV and Markdown: what the run page offers and the command prints.

Every export carries ``schema_version`` (SCHEMA_VERSION; an export without one is version 1):
times in whole milliseconds, costs as plain decimal strings (never ``0E-8``), the run's totals
(compare.totals), and in the CSV one ``score_<criterion>`` column per rubric criterion (1-5)."""

from __future__ import annotations

import io
import json

from arena.catalog.costs import cost_display, plain
from arena.compare.models import CompareRun
from arena.compare.totals import run_totals
from arena.core.csv_safe import SafeDictWriter

# 2: schema_version, whole ms, plain decimal costs, totals, truncated, judge calls' usage, and
# the CSV's criterion columns.
SCHEMA_VERSION = 2
ANSWER_COLUMNS = [
    "slot", "label", "model", "status", "ttft_ms", "total_ms", "input_tokens", "output_tokens",
    "tokens_estimated", "cost", "cost_status", "cost_shown", "finish_reason", "truncated",
    "error", "overall", "not_judged",
]  # fmt: skip
TAIL_COLUMNS = ["text", "schema_version"]


def whole_ms(value: float | None) -> int | None:
    return None if value is None else round(value)


def run_data(run: CompareRun) -> dict:
    """Everything saved of the run, in plain JSON types (costs as plain decimal strings)."""
    answers = list(run.answers.select_related("model"))
    by_label = {a.label: a.model.public_name for a in answers}
    verdict = dict(run.verdict or {})
    overall = verdict.get("overall", {})
    calls = list(run.judge_calls.all())
    return {
        "schema_version": SCHEMA_VERSION,
        "id": str(run.pk),
        "created_at": run.created_at.isoformat(),
        "status": run.status,
        "prompt": run.prompt,
        "system_prompt": run.system_prompt,
        "params": run.params,
        "seed": run.seed,
        "previous": str(run.previous_id) if run.previous_id else None,
        "judge": run.judge.public_name if run.judge else None,
        "rubric": run.rubric,
        "verdict": {**verdict, "winner_model": by_label.get(verdict.get("winner", ""), "")},
        "answers": [
            {
                "slot": a.slot,
                "label": a.label,
                "model": a.model.public_name,
                "status": a.status,
                "ttft_ms": whole_ms(a.ttft_ms),
                "total_ms": whole_ms(a.total_ms),
                "input_tokens": a.input_tokens,
                "output_tokens": a.output_tokens,
                "tokens_estimated": a.tokens_estimated,
                "cost": plain(a.cost),
                "cost_status": a.cost_status,
                "cost_shown": cost_display(model=a.model, cost=a.cost, cost_status=a.cost_status),
                "finish_reason": a.finish_reason,
                "truncated": a.truncated,
                "error": a.error_message,
                "overall": overall.get(a.label),
                "judged": a.judged,
                "not_judged": a.not_judged,
                "text": a.text,
            }
            for a in answers
        ],
        "judge_calls": [
            {
                "purpose": c.purpose,
                "attempt": c.attempt,
                "order": c.order,
                "temperature_sent": c.temperature_sent,
                "request": c.request,
                "reply": c.reply,
                "problem": c.problem,
                "input_tokens": c.input_tokens,
                "output_tokens": c.output_tokens,
                "tokens_estimated": c.tokens_estimated,
                "cost": plain(c.cost),
                "cost_status": c.cost_status,
            }
            for c in calls
        ],
        "totals": run_totals(run=run).as_data(),
    }


def as_json(run: CompareRun) -> str:
    return json.dumps(run_data(run), indent=2, ensure_ascii=False)


def as_csv(run: CompareRun) -> str:
    """One row per answer; ``score_<criterion>`` columns in the rubric's order (empty where
    the criterion was not scored for that answer)."""
    data = run_data(run)
    criteria = [str(c.get("name", "")) for c in data["rubric"] or [] if isinstance(c, dict)]
    scores = [f"score_{name}" for name in criteria]
    out = io.StringIO()
    # Answers, model names and errors are untrusted text: no cell may open as a formula.
    columns = ANSWER_COLUMNS + scores + TAIL_COLUMNS
    writer = SafeDictWriter(out, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for answer in data["answers"]:
        judged = answer["judged"] or {}
        row = {**answer, "schema_version": data["schema_version"]}
        for name, column in zip(criteria, scores, strict=True):
            row[column] = (judged.get(name) or {}).get("score")
        writer.writerow(row)
    return out.getvalue()


def _cell(value: object) -> str:
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def _total(total: dict) -> str:
    if not total["cost_status"]:
        return "none"
    counts = ", ".join(f"{n} {status}" for status, n in total["counts"].items() if n)
    return f"${total['cost']} ({total['cost_status']}: {counts})"


def _totals_lines(totals: dict) -> list[str]:
    judge = totals["judge"]
    tokens = ""
    if judge["calls"]:
        est = " (est.)" if judge["tokens_estimated"] else ""
        tokens = f"; {judge['input_tokens']} in / {judge['output_tokens']} out tokens{est}"
    return [
        f"**Total cost:** {_total(totals['run'])}",
        f"answers {_total(totals['answers'])}; judge {_total(judge)}, "
        f"{judge['calls']} call{'' if judge['calls'] == 1 else 's'}{tokens}",
    ]


def as_markdown(run: CompareRun) -> str:
    data = run_data(run)
    lines = [f"# Compare run {data['id']}", "", f"**Prompt:** {data['prompt']}", ""]
    if data["system_prompt"]:
        lines += [f"**System prompt:** {data['system_prompt']}", ""]
    lines += [f"**Parameters:** {json.dumps(data['params']) if data['params'] else 'defaults'}"]
    lines += ["", f"Schema version {data['schema_version']}; times in ms."]
    lines += [
        "",
        "| label | model | status | TTFT ms | total ms | tokens | cost | finish | score |",
    ]
    lines += ["|---|---|---|---|---|---|---|---|---|"]
    for a in data["answers"]:
        tokens = f"{a['output_tokens']}{' (est.)' if a['tokens_estimated'] else ''}"
        finish = f"{a['finish_reason']}{' (truncated)' if a['truncated'] else ''}"
        score = a["overall"] if a["overall"] is not None else a["not_judged"] or ""
        cells = [a["label"], a["model"], a["status"], a["ttft_ms"], a["total_ms"], tokens,
                 a["cost_shown"], finish, score]  # fmt: skip
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", *_totals_lines(data["totals"])]
    verdict = data["verdict"]
    if data["judge"]:
        lines += ["", f"**Judge:** {data['judge']}; winner: {verdict.get('winner_model') or '-'}"]
        if verdict.get("mock"):
            lines.append(f"({verdict['mock']})")
        if verdict.get("scope"):
            lines.append(verdict["scope"])
        if verdict.get("missing"):
            lines.append(f"Criteria not scored: {', '.join(verdict['missing'])}")
    for a in data["answers"]:
        lines += ["", f"## {a['label']}: {a['model']}", "", a["text"] or f"_{a['error']}_"]
    return "\n".join(lines) + "\n"
