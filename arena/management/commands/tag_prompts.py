from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from arena.catalog import costs
from arena.catalog.selectors import model_by_name
from arena.judges.calls import ATTEMPTS
from arena.judges.labeller import PromptLabeller
from arena.tagging.backlog import backlog_tag, forecast
from arena.tagging.services import VERSION, Tally
from ranking import progress


def _usd(amount: Decimal) -> str:
    return f"${amount:.4f}"


class Command(BaseCommand):
    help = (
        "Tag the votes that have no tags yet at this tagging version: the rules, and the LLM "
        "labeller (TAGGER_MODEL, or --labeller) within TAGGER_DAILY_BUDGET_USD. Resumable: "
        "each batch is written as it ends and a new run skips what is tagged. --tag-version N "
        "tags every vote again as version N (a new labeller), beside the old rows."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--tag-version", type=int, default=VERSION, metavar="N", help=f"default {VERSION}"
        )
        parser.add_argument("--labeller", metavar="NAME", help="a model's public name")
        parser.add_argument("--rules-only", action="store_true", help="no labeller calls")
        parser.add_argument("--limit", type=int, default=0, help="at most this many votes")
        parser.add_argument("--batch", type=int, default=2000)
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args, **o) -> None:
        if o["tag_version"] < 1 or o["batch"] < 1 or o["limit"] < 0:
            raise CommandError("--tag-version and --batch must be 1 or more, --limit 0 or more.")
        name = "" if o["rules_only"] else (o["labeller"] or settings.TAGGER_MODEL)
        model = model_by_name(name)
        if name and model is None:
            raise CommandError(f"No model named {name!r} to label prompts.")
        labeller = PromptLabeller(model) if model is not None else None
        budget = settings.TAGGER_DAILY_BUDGET_USD
        plan = forecast(version=o["tag_version"], labeller=labeller, budget=budget)
        votes = min(plan.votes, o["limit"]) if o["limit"] else plan.votes
        self.stdout.write(f"{votes} votes to tag at version {o['tag_version']}: " + (
            f"rules and the labeller {model.public_name}" if model else "rules alone"))  # fmt: skip
        if model is not None:
            self.stdout.write(self._cost_plan(model, plan))
        shown = progress.shown(quiet=o["quiet"])
        with progress.stage("tagging", unit=" votes", enabled=shown, total=votes):
            done = backlog_tag(
                labeller=labeller, version=o["tag_version"], limit=o["limit"] or None,
                batch=o["batch"], on_batch=lambda t: progress.advance(t.votes),
            )  # fmt: skip
        self.stdout.write(self._summary(done, model))

    def _cost_plan(self, model, plan) -> str:
        if costs.is_example_pricing(model=model):
            return (
                f"  {plan.texts} prompt texts to label; {model.public_name} is a mock (example "
                "pricing): its calls cost nothing"
            )
        priced = costs.price_on(model=model, on=timezone.localdate()) is not None
        if not priced:
            return (
                f"  {plan.texts} prompt texts to label; {model.public_name} has no price in the "
                "catalog, so its cost cannot be told (counted as 0 against the budget)"
            )
        return (
            f"  {plan.texts} prompt texts to label: at most {_usd(plan.worst_cost)} at list "
            f"price (the worst case: {ATTEMPTS} tries each, prompts counted a token a byte, "
            f"full replies); today's budget has {_usd(plan.budget_left)} left"
        )

    def _summary(self, done: Tally, model) -> str:
        lines = [f"Tagged {done.votes} votes."]
        if model is not None:
            cost = _usd(done.cost) + (" or more (a call's cost could not be told)"
                                      if done.cost_unknown else "")  # fmt: skip
            lines.append(
                f"  Labeller: {done.labelled} texts labelled, {done.reused} reused from "
                f"earlier votes of the same text, {done.failed} without a readable reply "
                f"(tagged by the rules; run again to retry); {done.calls} calls costing {cost}"
            )
            if done.over_budget:
                lines.append(
                    f"  {done.over_budget} texts left to the rules: today's budget "
                    "(TAGGER_DAILY_BUDGET_USD) is spent; run again tomorrow to label them"
                )
        return "\n".join(lines)
