"""A saved run as JSON, CSV and Markdown: what the run page offers and the command prints."""

from __future__ import annotations

import io
import json

from arena.catalog.costs import cost_display
from arena.compare.models import CompareRun
from arena.core.csv_safe import SafeDictWriter

ANSWER_COLUMNS = [
    "slot", "label", "model", "status", "ttft_ms", "total_ms", "input_tokens", "output_tokens",
    "tokens_estimated", "cost", "cost_status", "cost_shown", "finish_reason", "error",
    "overall", "not_judged", "text",
]  # fmt: skip


def run_data(run: CompareRun) -> dict:
    """Everything saved of the run, in plain JSON types (costs as decimal strings)."""
    answers = list(run.answers.select_related("model"))
    by_label = {a.label: a.model.public_name for a in answers}
    verdict = dict(run.verdict or {})
    overall = verdict.get("overall", {})
    return {
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
                "ttft_ms": a.ttft_ms,
                "total_ms": a.total_ms,
                "input_tokens": a.input_tokens,
                "output_tokens": a.output_tokens,
                "tokens_estimated": a.tokens_estimated,
                "cost": None if a.cost is None else str(a.cost),
                "cost_status": a.cost_status,
                "cost_shown": cost_display(model=a.model, cost=a.cost, cost_status=a.cost_status),
                "finish_reason": a.finish_reason,
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
            }
            for c in run.judge_calls.all()
        ],
    }


def as_json(run: CompareRun) -> str:
    return json.dumps(run_data(run), indent=2, ensure_ascii=False)


def as_csv(run: CompareRun) -> str:
    out = io.StringIO()
    # Answers, model names and errors are untrusted text: no cell may open as a formula.
    writer = SafeDictWriter(out, fieldnames=ANSWER_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for answer in run_data(run)["answers"]:
        writer.writerow(answer)
    return out.getvalue()


def _cell(value: object) -> str:
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def as_markdown(run: CompareRun) -> str:
    data = run_data(run)
    lines = [f"# Compare run {data['id']}", "", f"**Prompt:** {data['prompt']}", ""]
    if data["system_prompt"]:
        lines += [f"**System prompt:** {data['system_prompt']}", ""]
    lines += [f"**Parameters:** {json.dumps(data['params']) if data['params'] else 'defaults'}"]
    lines += [
        "",
        "| label | model | status | TTFT ms | total ms | tokens | cost | finish | score |",
    ]
    lines += ["|---|---|---|---|---|---|---|---|---|"]
    for a in data["answers"]:
        tokens = f"{a['output_tokens']}{' (est.)' if a['tokens_estimated'] else ''}"
        score = a["overall"] if a["overall"] is not None else a["not_judged"] or ""
        cells = [a["label"], a["model"], a["status"], a["ttft_ms"], a["total_ms"], tokens,
                 a["cost_shown"], a["finish_reason"], score]  # fmt: skip
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    verdict = data["verdict"]
    if data["judge"]:
        lines += ["", f"**Judge:** {data['judge']}; winner: {verdict.get('winner_model') or '-'}"]
        if verdict.get("mock"):
            lines.append(f"({verdict['mock']})")
        if verdict.get("missing"):
            lines.append(f"Criteria not scored: {', '.join(verdict['missing'])}")
    for a in data["answers"]:
        lines += ["", f"## {a['label']}: {a['model']}", "", a["text"] or f"_{a['error']}_"]
    return "\n".join(lines) + "\n"
