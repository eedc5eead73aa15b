"""Where a GPU pool's replica state lives: in Redis when there is one, so that every worker
process on every machine shares one count of requests in flight per replica, one cap and one
view of its health; in this process otherwise (the embedded default, one process).

A request in flight is a lease: a member of the replica's sorted set, scored by when it lapses,
renewed while the request streams. A worker killed mid-request stops renewing, and its slot
frees itself within ``LEASE_S``. Routing picks the healthy replica with the fewest requests in
flight, ties broken at random. A replica back from down is ramped in: its cap grows from one to
its full size over ``slow_start_s``, so it is not dog-piled the moment it returns.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from hashlib import sha256

from django.conf import settings

from arena.core.redis_loop import loop_redis, sync_redis

LEASE_S = 15.0
RENEW_S = LEASE_S / 3
_random = random.SystemRandom()


@dataclass
class Replica:
    url: str
    cap: int
    health: dict  # how it is probed: url, method, status, headers
    settings: dict = field(default_factory=dict)  # per-replica overrides (key, headers, ...)


def ramped_cap(cap: int, *, up_at: float, now: float, slow_start_s: float) -> int:
    """A replica's cap ``now``, ramped from 1 to ``cap`` over ``slow_start_s`` after it came
    back up at ``up_at``."""
    if slow_start_s <= 0 or now - up_at >= slow_start_s:
        return cap
    return max(1, int(cap * (now - up_at) / slow_start_s))


class LocalState:
    """One process's view: the embedded default."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leases: dict[str, set[str]] = {}
        self.failures: dict[str, int] = {}
        self.down: set[str] = set()
        self.up_at: dict[str, float] = {}

    async def acquire(
        self, replicas: list[Replica], exclude: set[str], slow_start_s: float
    ) -> tuple[Replica, str] | None | bool:
        """A replica with a free slot and the lease taken on it; False when healthy replicas
        exist but all are at their cap; None when no healthy one is left to try."""
        now = time.time()
        with self.lock:
            healthy = [r for r in replicas if r.url not in self.down and r.url not in exclude]
            if not healthy:
                return None
            load = {r.url: len(self.leases.get(r.url, ())) for r in healthy}
            free = [
                r for r in healthy
                if load[r.url] < ramped_cap(r.cap, up_at=self.up_at.get(r.url, 0.0), now=now,
                                            slow_start_s=slow_start_s)
            ]  # fmt: skip
            if not free:
                return False
            least = min(load[r.url] for r in free)
            best = _random.choice([r for r in free if load[r.url] == least])
            token = uuid.uuid4().hex
            self.leases.setdefault(best.url, set()).add(token)
            return best, token

    async def release(self, replica: Replica, token: str, *, failed: bool | None,
                      threshold: int) -> bool:  # fmt: skip
        """End the lease; count a failure (True: the replica's fault) or a success (False).
        Whether this release took the replica down."""
        with self.lock:
            self.leases.get(replica.url, set()).discard(token)
            if failed is True:
                self.failures[replica.url] = self.failures.get(replica.url, 0) + 1
                if self.failures[replica.url] >= threshold and replica.url not in self.down:
                    self.down.add(replica.url)
                    return True
            elif failed is False:
                self.failures[replica.url] = 0
        return False

    async def renew(self, holds: list[tuple[Replica, str]]) -> None:
        return None  # nothing lapses in one process

    def mark_up(self, replica: Replica) -> None:
        with self.lock:
            self.down.discard(replica.url)
            self.failures[replica.url] = 0
            self.up_at[replica.url] = time.time()

    def is_down(self, replica: Replica) -> bool:
        return replica.url in self.down

    def snapshot(self, replica: Replica) -> dict:
        with self.lock:
            return {
                "in_flight": len(self.leases.get(replica.url, ())),
                "down": replica.url in self.down,
                "failures": self.failures.get(replica.url, 0),
                "updated": time.time(),
            }


# Redis ------------------------------------------------------------------------------------

# KEYS: per replica, its lease set then its state hash. ARGV: now, lease end, token, a random
# number, then per replica: cap, excluded (1/0), slow start seconds. Returns the index picked
# (1-based), 0 when every healthy replica is at its cap, -1 when none is healthy.
_ACQUIRE = """
local now, lapse, token, draw = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local n = #KEYS / 2
local healthy, least, ties = 0, nil, {}
for i = 1, n do
  local leases, state = KEYS[2 * i - 1], KEYS[2 * i]
  local cap = tonumber(ARGV[4 + 3 * i - 2])
  local excluded, ramp = ARGV[4 + 3 * i - 1] == '1', tonumber(ARGV[4 + 3 * i])
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  if not excluded and redis.call('HGET', state, 'down') ~= '1' then
    healthy = healthy + 1
    local up_at = tonumber(redis.call('HGET', state, 'up_at') or '0')
    if ramp > 0 and now - up_at < ramp then
      cap = math.max(1, math.floor(cap * (now - up_at) / ramp))
    end
    local load = redis.call('ZCARD', leases)
    if load < cap then
      if least == nil or load < least then least, ties = load, {i}
      elseif load == least then ties[#ties + 1] = i end
    end
  end
end
if healthy == 0 then return -1 end
if #ties == 0 then return 0 end
local pick = ties[(draw % #ties) + 1]
redis.call('ZADD', KEYS[2 * pick - 1], lapse, token)
redis.call('EXPIRE', KEYS[2 * pick - 1], 3600)
return pick
"""

# KEYS: lease set, state hash. ARGV: token, failed (1 fault, 0 success, '' neither), threshold.
# Returns 1 when this release took the replica down.
_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  local failures = redis.call('HINCRBY', KEYS[2], 'failures', 1)
  redis.call('EXPIRE', KEYS[2], 86400)
  if failures >= tonumber(ARGV[3]) and redis.call('HGET', KEYS[2], 'down') ~= '1' then
    redis.call('HSET', KEYS[2], 'down', '1')
    return 1
  end
elseif ARGV[2] == '0' then
  redis.call('HSET', KEYS[2], 'failures', 0)
end
return 0
"""


def _keys(url: str) -> tuple[str, str]:
    name = sha256(url.encode()).hexdigest()[:24]
    return f"arena:pool:leases:{name}", f"arena:pool:state:{name}"


class RedisState:
    """Every process's view, on Redis: caps and health hold across workers and machines."""

    def __init__(self, url: str, *, lease_s: float = LEASE_S) -> None:
        self.url, self.lease_s = url, lease_s
        self._sync = None

    def _client(self):
        if self._sync is None:  # the prober's thread and the admin's reads: no event loop
            self._sync = sync_redis(self.url, decode=True)
        return self._sync

    async def acquire(
        self, replicas: list[Replica], exclude: set[str], slow_start_s: float
    ) -> tuple[Replica, str] | None | bool:
        now = time.time()
        token = uuid.uuid4().hex
        keys = [k for r in replicas for k in _keys(r.url)]
        args: list = [now, now + self.lease_s, token, _random.randrange(1 << 30)]
        for r in replicas:
            args += [r.cap, int(r.url in exclude), slow_start_s]
        picked = await loop_redis(self.url).eval(_ACQUIRE, len(keys), *keys, *args)
        if picked == -1:
            return None
        if picked == 0:
            return False
        return replicas[picked - 1], token

    async def release(self, replica: Replica, token: str, *, failed: bool | None,
                      threshold: int) -> bool:  # fmt: skip
        flag = "" if failed is None else "1" if failed else "0"
        keys = _keys(replica.url)
        went = await loop_redis(self.url).eval(_RELEASE, 2, *keys, token, flag, threshold)
        return went == 1

    async def renew(self, holds: list[tuple[Replica, str]]) -> None:
        if not holds:
            return
        pipe = loop_redis(self.url).pipeline(transaction=False)
        lapse = time.time() + self.lease_s
        for replica, token in holds:
            pipe.zadd(_keys(replica.url)[0], {token: lapse}, xx=True)
        await pipe.execute()

    def mark_up(self, replica: Replica) -> None:
        _, state = _keys(replica.url)
        self._client().hset(state, mapping={"down": "0", "failures": 0, "up_at": time.time()})

    def is_down(self, replica: Replica) -> bool:
        return self._client().hget(_keys(replica.url)[1], "down") == "1"

    def snapshot(self, replica: Replica) -> dict:
        leases, state = _keys(replica.url)
        client = self._client()
        client.zremrangebyscore(leases, "-inf", time.time())
        found = client.hgetall(state)
        return {
            "in_flight": client.zcard(leases),
            "down": found.get("down") == "1",
            "failures": int(found.get("failures") or 0),
            "updated": time.time(),
        }

    def forget(self, urls: list[str]) -> None:
        """Drop these replicas' state (tests whose servers' ports a later test may reuse)."""
        self._client().delete(*(k for url in urls for k in _keys(url)))


def state_for_process() -> LocalState | RedisState:
    """Redis when the process has one (every worker shares it), else this process's own."""
    return RedisState(settings.REDIS_URL) if settings.REDIS_URL else LocalState()
