"""Per-endpoint limits: concurrent requests, requests/minute and tokens/minute.

With Redis (settings.REDIS_URL, set when CELERY_BROKER_URL is redis) the counters live in Redis, so they hold
across every worker on every machine; otherwise they live in this process. Concurrency uses leases that the
holder renews; a crashed worker's leases expire after LEASE_TTL seconds. Rates use token buckets (capacity =
the per-minute limit, refilled continuously), so a burst never exceeds one minute's budget.
"""

import asyncio
import logging
import threading
import time
import uuid

from django.conf import settings

from stereoscope.outages import is_infrastructure_error

log = logging.getLogger(__name__)

LEASE_TTL = 10.0  # renewed every 3.3 s; a dead worker frees its slots within 10 s
RENEW_EVERY = 5.0
POLL_SECONDS = 0.02


def endpoint_key(endpoint):
    stamp = int(endpoint.created_at.timestamp() * 1_000_000) if endpoint.created_at else 0
    return f"stereoscope:limits:{endpoint.pk}:{stamp}"


class LocalStore:
    """In-process counters shared by every runner in this process."""

    def __init__(self):
        self.lock = threading.Lock()
        self.slots = {}  # key -> {lease_id: expires}
        self.buckets = {}  # key -> [tokens, ts]
        self.paused = {}  # key -> until

    async def try_slot(self, key, limit, lease_id):
        now = time.monotonic()
        with self.lock:
            leases = self.slots.setdefault(key, {})
            for lid in [lid for lid, exp in leases.items() if exp < now]:
                del leases[lid]
            if len(leases) < limit:
                leases[lease_id] = now + LEASE_TTL
                return True
            return False

    async def renew(self, key, lease_ids):
        now = time.monotonic()
        with self.lock:
            leases = self.slots.setdefault(key, {})
            for lid in lease_ids:
                if lid in leases:
                    leases[lid] = now + LEASE_TTL

    async def release(self, key, lease_id):
        with self.lock:
            self.slots.get(key, {}).pop(lease_id, None)

    async def take(self, key, capacity, amount):
        """Take `amount` from a per-minute bucket. Returns 0 when taken, else the seconds to wait."""
        now = time.monotonic()
        rate = capacity / 60.0
        with self.lock:
            tokens, ts = self.buckets.get(key, (float(capacity), now))
            tokens = min(float(capacity), tokens + (now - ts) * rate)
            amount = min(amount, capacity)
            if amount > 0 and tokens < amount:
                self.buckets[key] = (tokens, now)
                return (amount - tokens) / rate
            self.buckets[key] = (tokens - amount, now)
            return 0.0

    async def adjust(self, key, capacity, delta):
        """Debit (delta > 0) or credit (delta < 0) a bucket once the real token count is known."""
        now = time.monotonic()
        rate = capacity / 60.0
        with self.lock:
            tokens, ts = self.buckets.get(key, (float(capacity), now))
            tokens = min(float(capacity), tokens + (now - ts) * rate)
            self.buckets[key] = (min(float(capacity), tokens - delta), now)

    async def pause(self, key, seconds):
        with self.lock:
            self.paused[key] = max(self.paused.get(key, 0), time.monotonic() + seconds)

    async def paused_for(self, key):
        with self.lock:
            return max(0.0, self.paused.get(key, 0) - time.monotonic())

    async def slot_unless_paused(self, key, limit, lease_id):
        """(seconds the key is still paused, False), else (0, whether a slot was taken)."""
        wait = await self.paused_for(key)
        if wait > 0:
            return wait, False
        return 0.0, await self.try_slot(key, limit, lease_id)

    async def close(self):
        pass


SLOT_LUA = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
  redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3])) + 60)
  return 1
end
return 0
"""
# The pause check and the slots of every acquire of a key asked in one turn of the loop, in one round trip (a call
# per unit was a round trip per unit), after removing the leases this process released since its last call (a
# released slot goes back with the next acquire instead of a round trip of its own). ARGV: limit, TTL, the number n
# of leases asked, the n lease ids, then the lease ids released. Returns one answer a lease, in order: the seconds
# still paused (as text), else "0" with its slot taken, else "-1".
ACQUIRE_LUA = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local n = tonumber(ARGV[3])
for i = 4 + n, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
local out = {}
local paused = tonumber(redis.call('GET', KEYS[2]) or '0')
if paused > now then
  for i = 1, n do out[i] = tostring(paused - now) end
  return out
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
local taken = false
for i = 1, n do
  if held < tonumber(ARGV[1]) then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3 + i])
    held = held + 1
    taken = true
    out[i] = '0'
  else
    out[i] = '-1'
  end
end
if taken then redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 60) end
return out
"""
RENEW_LUA = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1])) + 60)
return 1
"""
BUCKET_LUA = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local cap = tonumber(ARGV[1]); local amount = tonumber(ARGV[2]); local mode = ARGV[3]
local rate = cap / 60.0
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1]) or cap; local ts = tonumber(v[2]) or now
tokens = math.min(cap, tokens + (now - ts) * rate)
local wait = 0
if mode == 'take' then
  if amount > cap then amount = cap end
  if amount > 0 and tokens < amount then wait = (amount - tokens) / rate else tokens = tokens - amount end
else
  tokens = math.min(cap, tokens - amount)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('EXPIRE', KEYS[1], 180)
return tostring(wait)
"""
PAUSE_LUA = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local untl = now + tonumber(ARGV[1]); local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if untl > cur then redis.call('SET', KEYS[1], tostring(untl), 'EX', math.ceil(tonumber(ARGV[1])) + 5) end
return 1
"""
PAUSED_LUA = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur > now then return tostring(cur - now) end
return '0'
"""


class RedisStore:
    """The same counters in Redis; one store per event loop (redis.asyncio clients are loop-bound)."""

    def __init__(self, url):
        import redis.asyncio as aioredis  # lazy: heavy library, loaded on first use

        self.redis = aioredis.from_url(url)
        self.slot = self.redis.register_script(SLOT_LUA)
        self.acquire_script = self.redis.register_script(ACQUIRE_LUA)
        self.renew_script = self.redis.register_script(RENEW_LUA)
        self.bucket = self.redis.register_script(BUCKET_LUA)
        self.pause_script = self.redis.register_script(PAUSE_LUA)
        self.paused_script = self.redis.register_script(PAUSED_LUA)
        self.releasing = {}  # key -> lease ids released and not yet removed in Redis
        self.flushing = None  # the loop callback that removes them if no acquire took them along
        self.acquiring = {}  # (key, limit) -> [(lease id, future)] asked in this turn of the loop
        self.sending = None  # the loop callback that sends them
        self.tasks = set()

    async def try_slot(self, key, limit, lease_id):
        return bool(await self.slot(keys=[key + ":conc"], args=[limit, lease_id, LEASE_TTL]))

    async def slot_unless_paused(self, key, limit, lease_id):
        """(seconds the key is still paused, False), else (0, whether a slot was taken). The acquires of a key asked
        in one turn of the loop (a burst of answers frees many workers at once) go to Redis together, in one round
        trip that also gives back the slots of this key released since the last one."""
        future = asyncio.get_running_loop().create_future()
        self.acquiring.setdefault((key, limit), []).append((lease_id, future))
        if self.sending is None:
            self.sending = asyncio.get_running_loop().call_soon(self._send_acquires)
        answer = await future
        return (answer, False) if answer > 0 else (0.0, answer == 0)

    def _send_acquires(self):
        self.sending = None
        acquiring, self.acquiring = self.acquiring, {}
        for (key, limit), asked in acquiring.items():
            self._spawn(self._acquire_many(key, limit, asked))

    def _spawn(self, coroutine):
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _acquire_many(self, key, limit, asked):
        released = self.releasing.pop(key, [])
        try:
            answers = await self.acquire_script(
                keys=[key + ":conc", key + ":pause"],
                args=[limit, LEASE_TTL, len(asked), *[lease for lease, _ in asked], *released],
            )
        except BaseException as exc:
            self.releasing.setdefault(key, []).extend(released)  # still to give back (they expire meanwhile)
            for _, future in asked:
                if future.done():
                    continue
                if isinstance(exc, Exception):
                    future.set_exception(exc)  # each caller handles it as before (Redis away: the unit waits)
                else:
                    future.cancel()
            if not isinstance(exc, Exception):
                raise
            return
        for (lease, future), answer in zip(asked, answers, strict=True):
            answer = float(answer)
            if not future.done():
                future.set_result(answer)
            elif answer == 0:  # its caller gave up meanwhile: the slot goes back at once
                await self.release(key, lease)

    async def renew(self, key, lease_ids):
        if lease_ids:
            await self.renew_script(keys=[key + ":conc"], args=[LEASE_TTL, *lease_ids])

    async def release(self, key, lease_id):
        """Give the slot back with this process's next acquire of the key, which usually follows at once (a worker
        takes its next unit); else with a flush at the loop's next turn. Either way before anyone waits a poll."""
        self.releasing.setdefault(key, []).append(lease_id)
        if self.flushing is None:
            self.flushing = asyncio.get_running_loop().call_soon(self._flush_soon)

    def _flush_soon(self):
        self.flushing = None
        if any(key not in {k for k, _ in self.acquiring} for key in self.releasing):
            self._spawn(self.flush(keep={key for key, _ in self.acquiring}))

    async def flush(self, keep=()):
        """Remove the released leases no acquire has taken along (Redis away: they expire on their own); those of
        the keys in `keep` go with the acquires of those keys about to be sent."""
        releasing = {key: leases for key, leases in self.releasing.items() if key not in keep}
        self.releasing = {key: leases for key, leases in self.releasing.items() if key in keep}
        for key, leases in releasing.items():
            try:
                await self.redis.zrem(key + ":conc", *leases)
            except Exception as exc:
                if not is_infrastructure_error(exc):
                    raise
                log.warning("could not release %d concurrency slots (%s); they expire on their own", len(leases), exc)

    async def take(self, key, capacity, amount):
        return float(await self.bucket(keys=[key], args=[capacity, amount, "take"]))

    async def adjust(self, key, capacity, delta):
        await self.bucket(keys=[key], args=[capacity, delta, "adjust"])

    async def pause(self, key, seconds):
        await self.pause_script(keys=[key + ":pause"], args=[seconds])

    async def paused_for(self, key):
        return float(await self.paused_script(keys=[key + ":pause"]))

    async def close(self):
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.flush()
        await self.redis.aclose()


_local_store = LocalStore()


def make_store():
    """Redis when configured (holds across workers), else this process's counters."""
    url = getattr(settings, "REDIS_URL", "")
    return RedisStore(url) if url else _local_store


def estimate_tokens(text):
    """A rough token count (about four characters per token) for planning and rate budgets."""
    return max(1, len(text or "") // 4)


ANSWER_TOKENS = 256  # an answer's tokens when the call sets no max_tokens


def estimate_call(messages, params):
    """(input, output) tokens of one call as estimated before it is sent: its messages' tokens, and its max_tokens
    (else ANSWER_TOKENS). The runner's attempt rows, batch plans and discovery estimates all count this way."""
    return sum(estimate_tokens(str(m.get("content", ""))) for m in messages), int(
        params.get("max_tokens") or ANSWER_TOKENS
    )


class EndpointLimiter:
    """Admits calls to one endpoint (or, with `key` and limits given, one provider connection) within its limits.
    Create one per endpoint (connection) per event loop."""

    def __init__(self, endpoint, store, *, key=None, max_concurrency=None, rpm=None, tpm=None):
        self.key = key or endpoint_key(endpoint)
        self.max_concurrency = max(1, (max_concurrency if key else endpoint.max_concurrency) or 1)
        self.rpm = rpm if key else endpoint.requests_per_minute
        self.tpm = tpm if key else endpoint.tokens_per_minute
        self.store = store
        self.local = asyncio.Semaphore(self.max_concurrency)
        self.held = set()

    async def acquire(self, est_tokens, stop=None):
        """Wait for a slot and the rate budget. Returns a lease id, or None if `stop` was set meanwhile."""
        await self.local.acquire()
        try:
            lease = uuid.uuid4().hex
            while True:
                if stop is not None and stop.is_set():
                    self.local.release()
                    return None
                wait, taken = await self.store.slot_unless_paused(self.key, self.max_concurrency, lease)
                if taken:
                    break
                await asyncio.sleep(min(max(wait, POLL_SECONDS), 1.0))
            self.held.add(lease)
            for capacity, amount, suffix in ((self.rpm, 1, ":rpm"), (self.tpm, est_tokens, ":tpm")):
                while capacity:
                    if stop is not None and stop.is_set():
                        await self.release(lease)
                        return None
                    wait = await self.store.take(self.key + suffix, capacity, amount)
                    if wait <= 0:
                        break
                    await asyncio.sleep(min(wait, 1.0))
            return lease
        except BaseException:
            self.local.release()
            raise

    async def release(self, lease, est_tokens=0, actual_tokens=None):
        try:
            self.held.discard(lease)
            await self.store.release(self.key, lease)
            if self.tpm and actual_tokens is not None and actual_tokens != est_tokens:
                await self.store.adjust(self.key + ":tpm", self.tpm, actual_tokens - est_tokens)
        finally:
            self.local.release()

    async def renew(self):
        if self.held:
            await self.store.renew(self.key, list(self.held))

    async def pause(self, seconds):
        """Hold every caller of this endpoint (in every worker) back, e.g. after a 429 with Retry-After."""
        await self.store.pause(self.key, seconds)


def connection_limiter(connection, store):
    """A limiter of a provider connection's own limits (over every endpoint on it, in every worker), or None when
    staff set none."""
    if connection is None or not (
        connection.max_concurrency or connection.requests_per_minute or connection.tokens_per_minute
    ):
        return None
    return EndpointLimiter(
        None,
        store,
        key=f"stereoscope:limits:connection:{connection.pk}",
        max_concurrency=connection.max_concurrency or 1_000_000,
        rpm=connection.requests_per_minute,
        tpm=connection.tokens_per_minute,
    )


class CombinedLimiter:
    """The connection's limits, then the endpoint's: a call needs a slot in both (always taken in that order)."""

    def __init__(self, first, second):
        self.first, self.second = first, second
        self.max_concurrency = min(first.max_concurrency, second.max_concurrency)

    async def acquire(self, est_tokens, stop=None):
        outer = await self.first.acquire(est_tokens, stop=stop)
        if outer is None:
            return None
        try:
            inner = await self.second.acquire(est_tokens, stop=stop)
        except BaseException:
            await self.first.release(outer)
            raise
        if inner is None:
            await self.first.release(outer)
            return None
        return (outer, inner)

    async def release(self, lease, est_tokens=0, actual_tokens=None):
        outer, inner = lease
        try:
            await self.second.release(inner, est_tokens, actual_tokens)
        finally:
            await self.first.release(outer, est_tokens, actual_tokens)

    async def renew(self):
        await self.first.renew()
        await self.second.renew()

    async def pause(self, seconds):
        await self.second.pause(seconds)
