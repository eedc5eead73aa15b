"""What several test modules share: named users and models, battles ready for a vote, the wait
for answers, websocket steps, a mock model server, real child processes, and domain asserts.
Fixtures live in conftest.py; everything here is a plain function or constant, imported by the
tests that use it (no test module imports another).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, connections
from django.test import Client
from django.utils import timezone

from accounts.models import User
from arena.backends.base import ChatRequest, Message
from arena.backends.registry import backend_for
from arena.catalog.models import ModelEntry
from arena.core.text import estimate_tokens
from arena.devtools.fixture_server import FixtureServer, stream_fixture
from arena.generation.runner import StreamResult, discard, stream_answer
from arena.records.models import Answer, Battle, Turn, Vote
from tests.backends.vendors import BACKEND_TEST_ENV, VENDORS

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "var" / os.environ.get("PYTEST_XDIST_WORKER", "")  # one folder per xdist worker
PASSWORD = "correct-horse-battery-staple"
# A fast hasher for the passwords tests make (the default is slow on purpose); one that every
# process of the suite knows, since the test process hashes and a server may check.
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
RECEIVE_TIMEOUT = 30  # a guard against hangs, not a speed assertion
WORKER_TURN_DEADLINE_S = 8  # short, so a deliberately stalled answer ends before the next test
SESSION_RATELIMIT_PREFIX = f"rl-test-{uuid.uuid4().hex}:"


# Users and models ---------------------------------------------------------------------------


def make_user(email: str, *, verified: bool = True, terms: bool = True, **extra) -> User:
    """A rater; crowd raters need a verified email and the rater's terms accepted to battle,
    so by default they have both."""
    from allauth.account.models import EmailAddress

    if terms:
        extra.setdefault("terms_version", settings.TERMS["VERSION"])
    user = User.objects.create_user(email, PASSWORD, **extra)
    EmailAddress.objects.create(user=user, email=user.email, verified=verified, primary=True)
    return user


def make_model(name: str, model_id: str, *, organisation="", vendor="", takes_images=False, **mock):
    return ModelEntry.objects.create(
        takes_images=takes_images,
        public_name=name,
        organisation=organisation,
        vendor=vendor,
        model_id=model_id,
        backend=ModelEntry.Backend.MOCK,
        backend_settings={"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 40, **mock},
        supported_params=["temperature", "top_p", "max_tokens"],
    )


def make_two_models(**extra) -> tuple[ModelEntry, ModelEntry]:
    """Two fast mock models whose names, ids and vendors are easy to spot in any payload."""
    return (
        make_model(
            "Zephyr Quill",
            "zq-large-001",
            organisation="Nimbus Research",
            vendor="Nimbusvendor",
            style="markdown",
            **extra,
        ),
        make_model(
            "Orchid Lantern",
            "ol-small-002",
            organisation="Basalt Labs",
            vendor="Basaltvendor",
            style="plain",
            answer_tokens=25,
            **extra,
        ),
    )


def make_judge() -> ModelEntry:
    """Compare mode's mock judge, as the demo seeds it: never in a battle, a vendor of its own."""
    return ModelEntry.objects.create(
        public_name="Mock Judge",
        vendor="mock-judge",
        model_id="mock-judge-1",
        backend="mock",
        backend_settings={"judge": True, "ttft_ms": 0, "tokens_per_s": 0},
        active=False,
    )


def identity_strings(*models: ModelEntry) -> list[str]:
    out: list[str] = []
    for m in models:
        out += [m.public_name, m.model_id, m.organisation, m.vendor, m.backend]
        wire = m.backend_settings
        out += [str(wire[k]) for k in ("base_url", "api_key_env") if k in wire]
    return [s for s in out if s]


def assert_no_identity(seen: str | Iterable[str], models: Iterable[ModelEntry]) -> None:
    """Nothing in ``seen`` (a page, frames, pane text) names any of the models, in any case."""
    text = (seen if isinstance(seen, str) else "\n".join(seen)).lower()
    for secret in identity_strings(*models):
        assert secret.lower() not in text, f"{secret!r} was shown before the vote"


# Battles ------------------------------------------------------------------------------------


def wait_for_answers(battle_id: object = None, *, limit_s: float = 30.0) -> None:
    """Block until every answer of the battle (without one: every answer) is finished; a worker
    may be producing them. Fails, naming the answers still open, when they are not in time."""
    answers = Answer.objects.filter(status__in=[Answer.Status.PENDING, Answer.Status.RUNNING])
    if battle_id is not None:
        answers = answers.filter(turn__battle_id=battle_id)
    deadline = time.monotonic() + limit_s
    while answers.exists():
        if time.monotonic() > deadline:
            still = [f"{a.pk} ({a.status})" for a in answers]
            whose = f" of battle {battle_id}" if battle_id is not None else ""
            raise AssertionError(
                f"answers {', '.join(still)}{whose} did not finish within {limit_s} s"
            )
        time.sleep(0.02)


def wait_until(condition: Callable[[], bool], *, limit_s: float = 30.0) -> None:
    """Block until ``condition()`` holds (a worker may be making it so); fail when it has not
    within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{condition} did not hold within {limit_s} s")
        time.sleep(0.02)


def ready_battle(rater: User, text: str = "What is a monad?") -> Battle:
    """A battle whose answers are complete and shown, ready for a vote."""
    from arena.battles.prompts import prompt_create
    from arena.battles.services import battle_start, turn_mark_shown

    # A curated prompt, as a drawn one would be (gold items can only come from those).
    prompt, _ = prompt_create(text=text)
    battle = battle_start(rater=rater, text=text, prompt_id=prompt.pk)
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=battle.turns.get(index=0).pk)
    return Battle.objects.get(pk=battle.pk)


def run_together(*calls: Callable[[], object]) -> list[str]:
    """Start every call at the same instant, each in its own thread and connection: "ok" or the
    ServiceError code of each, in the order they finished."""
    from arena.core.errors import ServiceError

    barrier = threading.Barrier(len(calls))
    outcomes: list[str] = []

    def run(call) -> None:
        barrier.wait()
        try:
            call()
            outcomes.append("ok")
        except ServiceError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


# Integrity: votes that pass every defence, flags, gold --------------------------------------


def integrity_settings(settings, **overrides) -> None:
    settings.INTEGRITY = {**settings.INTEGRITY, **overrides}


def shown_ago(battle: Battle, seconds: float) -> None:
    """Move the vote clock back, as if the rater had been reading for ``seconds``."""
    Turn.objects.filter(battle=battle).update(shown_at=timezone.now() - timedelta(seconds=seconds))


def calm_battle(rater: User, text: str) -> Battle:
    """A ready battle whose answers were shown long enough ago to have been read."""
    battle = ready_battle(rater, text)
    shown_ago(battle, 600)
    return battle


def calm_vote(rater: User, text: str, choice: str = "a") -> Vote:
    """A vote that should pass every defence."""
    from arena.battles.services import vote_cast

    battle = calm_battle(rater, text)
    return vote_cast(battle_id=battle.pk, rater=rater, choice=choice)


def flag_reasons(vote: Vote) -> list[str]:
    from arena.integrity.models import VoteFlag

    return sorted(
        VoteFlag.objects.filter(vote=vote, action=VoteFlag.Action.FLAG).values_list(
            "reason", flat=True
        )
    )


def make_gold_items(curator: User, n: int, correct_side: str = "a") -> list:
    from arena.battles.gold import gold_mark

    items = []
    for i in range(n):
        battle = ready_battle(curator, f"Is {i * 7 + 3} a prime number?")
        items.append(gold_mark(battle_id=battle.pk, correct_side=correct_side))
    return items


def gold_battle(rater: User) -> Battle:
    """A gold battle drawn for the rater, its answers shown long ago."""
    from arena.battles.gold import gold_draw
    from arena.battles.services import battle_start, turn_mark_shown

    prompt = gold_draw(rater=rater)
    assert prompt is not None, "no gold item was drawn"
    battle = battle_start(rater=rater, text=prompt.text, prompt_id=prompt.pk)
    assert battle.gold_id is not None
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=battle.turns.get().pk)
    shown_ago(battle, 600)
    return Battle.objects.select_related("gold__source").get(pk=battle.pk)


def choose(battle: Battle, *, right: bool) -> str:
    """The side to vote for on a gold battle, to agree with its known answer or not."""
    source = battle.gold.source
    better = source.model_a_id if battle.gold.correct_side == "a" else source.model_b_id
    better_side = "a" if battle.model_a_id == better else "b"
    return better_side if right else {"a": "b", "b": "a"}[better_side]


# The websocket ------------------------------------------------------------------------------


# What a browser on the site's own page sends with the handshake.
SAME_ORIGIN = [(b"host", b"testserver"), (b"origin", b"http://testserver")]


def session_headers(user: User) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    return [
        (b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()),
        *SAME_ORIGIN,
    ]


def real_socket(url: str, headers: list[tuple[bytes, bytes]]):
    """A websocket to a real server at ``url``, signed in by ``headers``' session cookie."""
    from urllib.parse import urlsplit

    from websockets.asyncio.client import connect

    cookie = dict(headers)[b"cookie"].decode()
    return connect(
        f"ws://{urlsplit(url).netloc}/ws/battle/",
        additional_headers={"Cookie": cookie, "Origin": url},
        open_timeout=RECEIVE_TIMEOUT,
    )


async def socket_frames_until(sock, *types: str) -> list[dict]:
    """``frames_until`` on a real socket."""
    seen: list[dict] = []
    while not seen or seen[-1]["type"] not in types:
        seen.append(json.loads(await asyncio.wait_for(sock.recv(decode=True), RECEIVE_TIMEOUT)))
    return seen


def answer_texts(battle_id: object) -> dict[str, str]:
    """The battle's first-turn answers as stored, by side: what a pane must end up showing."""
    answers = Answer.objects.filter(turn__battle_id=battle_id, turn__index=0)
    return dict(answers.values_list("side", "text"))


def pane_text(frames: list[dict], side: str) -> str:
    """What one side's pane shows after these frames."""
    return "".join(f[side] for f in frames if f["type"] == "delta")


async def frames_until(comm, *types: str) -> list[dict]:
    """Every frame up to and including the first whose type is one of ``types``."""
    seen: list[dict] = []
    while True:
        frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
        seen.append(frame)
        if frame["type"] in types:
            return seen


async def start_battle(comm, prompt: str = "Explain recursion briefly.") -> list[dict]:
    """Start a battle on the socket; its frames up to the end of the first turn."""
    await comm.send_json_to({"action": "start", "prompt": prompt})
    return await frames_until(comm, "turn_complete", "void", "error")


def sign_in(page, server: str, email: str) -> None:
    page.goto(server + "/accounts/login/")
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_selector("#arena[data-connected=true]")


# A mock model server for synchronous callers ------------------------------------------------


@contextlib.contextmanager
def serving(**options) -> Iterator:
    """A MockServer on its own event loop in a background thread, for synchronous callers."""
    from arena.devtools.mock_server import MockServer

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True, name="mock-server")
    thread.start()
    server = MockServer(default={"ttft_ms": 0, "tokens_per_s": 0}, **options)
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=10)
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


# Real processes -----------------------------------------------------------------------------


def subprocess_env() -> dict[str, str]:
    """The environment a server or worker needs to share this test session's database."""
    db = connections["default"].settings_dict
    env = dict(os.environ)
    if db["ENGINE"].endswith("postgresql"):
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        env["DATABASE_URL"] = f"postgres://{auth}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    else:
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    env["ARENA_PACE_TICK_MS"] = "5"
    env["ARENA_PACE_CHARS"] = "60"
    env["ARENA_TURN_DEADLINE_S"] = str(WORKER_TURN_DEADLINE_S)
    env["RATELIMIT_CACHE_PREFIX"] = SESSION_RATELIMIT_PREFIX
    # Servers of this run count allauth's limits (one confirmation mail per address every few
    # minutes) apart from any earlier run's on the same Redis.
    env["CACHE_KEY_PREFIX"] = SESSION_RATELIMIT_PREFIX
    env["PASSWORD_HASHERS"] = ",".join(FAST_PASSWORD_HASHERS)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(BACKEND_TEST_ENV)  # test servers on loopback, the keys tests set: allowed
    return env


# Vendor adapters: keys, the request, and running an adapter as production does --------------
# Each adapter test runs under ``stream_answer``, so what is checked is the contract the rest of
# the arena relies on: the exact text, a terminal event or a typed error, usage, request ids,
# TTFT at the first real text, and a key that never leaks. Each vendor's data: backends/vendors.py

KEYS = {
    "OPENAI_API_KEY": "sk-proj-test-7Hq2vN9xK4mP1wR8sT3u",
    "ANTHROPIC_API_KEY": "sk-ant-api03-test-Zt5Yb2Lq9Nc6Vx1Mw4Ks",
    "GEMINI_API_KEY": "AIzaSyTest-3fG8hJ1kL6mN9pQ2rS5tU",
    "VLLM_API_KEY": "vllm-test-key-Qe4Rt7Yu1Io3Pa6Sd9",
}
SYSTEM = "Answer in one sentence."
QUESTION = "Name a prime number and say why it is prime."
REQUEST = ChatRequest(
    model_id="test-model",
    messages=(Message("system", SYSTEM), Message("user", QUESTION)),
    params={"temperature": 0.7, "top_p": 0.9, "max_tokens": 256},
)


def backend(server: FixtureServer, kind: str, **settings):
    vendor = VENDORS[kind]
    base = {"base_url": server.url + vendor.base_path, "timeout_s": 5, **vendor.settings}
    return backend_for(kind, {**base, **settings})


async def run(adapter, request: ChatRequest = REQUEST) -> tuple[StreamResult, list[str]]:
    seen: list[str] = []

    async def on_delta(text: str) -> None:
        seen.append(text)

    result = await stream_answer(
        adapter, request, on_delta=on_delta, max_chars=100_000, timeout_s=10
    )
    assert "".join(seen) == result.text
    assert (result.ttft_ms is not None) == bool(result.text)
    leaked = json.dumps(result.as_dict())
    assert not any(key in leaked for key in KEYS.values())
    return result, seen


def estimated_input(request: ChatRequest = REQUEST) -> int:
    return estimate_tokens("x" * sum(len(m.content) for m in request.messages))


def variant(fixture: str, old: str, new: str) -> bytes:
    body = stream_fixture(fixture)
    assert old.encode() in body
    return body.replace(old.encode(), new.encode())


# Pools --------------------------------------------------------------------------------------


async def ask(backend, text: str = "hello"):
    """One answer from a (pooled) backend, as the arena streams it."""
    request = ChatRequest("m", (Message("user", text),), {"max_tokens": 40})
    return await stream_answer(backend, request, on_delta=discard, max_chars=10_000, timeout_s=10)


def pooled(replicas: list, **settings):
    """An OpenAI-compatible backend pooled over these mock servers."""
    return backend_for(
        "openai_compatible", {"replicas": [{"base_url": r.url} for r in replicas], **settings}
    )
