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
PAUSE_FRESH = 0.2  # a slot kept for the next unit is reused only on a pause state read at most this long ago
WATCH_RETRY = 0.5  # how soon the pause watch subscribes again after losing Redis
WATCH_WAIT = 0.1  # how long a store's first acquire waits for its pause watch, so the slots it takes can be kept
PAUSE_CHANNEL = "stereoscope:limits:paused"


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

    async def reuse_slot(self, key):
        """A slot of the key this process holds and no caller uses, to take without asking again; here, none (a
        local slot costs no round trip)."""
        return None

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
redis.call('PUBLISH', ARGV[2], KEYS[1] .. ' ' .. ARGV[1])
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
        self.url = url
        self.keep = {}  # lease -> when it was taken or last renewed, for leases taken while the pause watch was up
        # (a worker may keep them for its next unit)
        self.pause_seen = {}  # key -> (monotonic time its pause state was last read, monotonic time paused until)
        self.reading = {}  # key -> the pause read under way, shared by the reuses waiting for it
        self.watching = False  # subscribed to PAUSE_CHANNEL: a pause set anywhere, or Redis lost, is known at once
        self.watch = None
        self.subscribed = None  # set once the watch is up (an asyncio.Event, made on the store's loop)
        self.waited = False  # the first acquire has waited for the watch
        self.epoch = 0  # how often the watch was lost; a lease taken before a loss is not kept
        self.keeping = {}  # key -> when a slot of it was last kept or reused: its pause state is read in the
        # background (`_keep_fresh`) so a reuse need not wait for a read
        self.fresh = None  # the task that reads it

    async def reuse_slot(self, key):
        """The slot a worker of this process gave back in this turn of the loop (it takes its next unit at once),
        kept instead of given back and taken again: no round trip to Redis (issue 36). Only while the pause watch is
        up, and when the key's pause state, read at most PAUSE_FRESH ago (else read once, shared by the reuses
        waiting meanwhile) or told since by the watch, says it is not paused. Else None: the caller asks Redis.
        While its slots are kept, the key's pause state is read in the background every PAUSE_FRESH / 2, so a
        reuse rarely waits for a read (on a busy loop that wait was a whole turn of the loop)."""
        self._start_watch()
        spare = self.releasing.get(key)
        lease = next((lease for lease in reversed(spare) if lease in self.keep), None) if spare else None
        if lease is None or not self.watching:
            return None
        spare.remove(lease)
        self.keeping[key] = time.monotonic()
        if time.monotonic() - self.keep[lease] > LEASE_TTL - RENEW_EVERY:  # not renewed lately: it may have expired
            self._release_later(key, lease)
            return None
        try:
            if time.monotonic() - self.pause_seen.get(key, (float("-inf"), 0.0))[0] > PAUSE_FRESH:
                await self._read_pause(key)
        except BaseException:
            self._release_later(key, lease)
            raise
        if not self.watching or lease not in self.keep or self.pause_seen[key][1] > time.monotonic():
            self._release_later(key, lease)
            return None
        return lease

    async def _read_pause(self, key):
        reading = self.reading.get(key)
        if reading is None:
            reading = self.reading[key] = asyncio.ensure_future(self._pause_read(key))
            reading.add_done_callback(lambda task: self._read_done(key, task))
        await asyncio.shield(reading)

    def _read_done(self, key, task):
        self.reading.pop(key, None)
        if not task.cancelled():
            task.exception()  # retrieved: each waiting reuse has raised it already

    async def _pause_read(self, key):
        sent = time.monotonic()
        self._saw_pause(key, float(await self.paused_script(keys=[key + ":pause"])), read_at=sent)

    def _saw_pause(self, key, wait, read_at=None):
        """Note the key's pause state: `wait` seconds still paused (0: not paused), read from Redis at `read_at`
        (None: told by this process or the watch, not a read)."""
        seen, until = self.pause_seen.get(key, (float("-inf"), 0.0))
        if read_at is not None:
            seen = max(seen, read_at)
        if wait > 0:
            until = max(until, time.monotonic() + wait)
        self.pause_seen[key] = (seen, until)

    def _start_watch(self):
        if self.watch is None:
            self.subscribed = asyncio.Event()
            self.watch = asyncio.get_running_loop().create_task(self._watch_pauses())
            self.fresh = asyncio.get_running_loop().create_task(self._keep_fresh())

    async def _wait_for_watch(self):
        """Once, before this store's first acquire: wait (at most WATCH_WAIT) for the pause watch, so the first
        slots taken can be kept too (a slot taken before the watch is up is not): else the units after a run's first
        wave each need a round trip to Redis, just when the loop is busiest."""
        if self.waited or self.subscribed is None:
            return
        self.waited = True
        try:
            await asyncio.wait_for(self.subscribed.wait(), WATCH_WAIT)
        except asyncio.TimeoutError:
            pass  # no watch yet: these slots are not kept

    async def _keep_fresh(self):
        """Every PAUSE_FRESH / 2, read the pause state of each key whose slots were kept or reused within LEASE_TTL,
        unless it was read (or a read was started) that recently."""
        while True:
            await asyncio.sleep(PAUSE_FRESH / 2)
            now = time.monotonic()
            for key, last in list(self.keeping.items()):
                if now - last > LEASE_TTL:
                    del self.keeping[key]
                elif self.watching and key not in self.reading and now - self._read_at(key) >= PAUSE_FRESH / 2:
                    try:
                        await self._read_pause(key)
                    except Exception as exc:  # Redis away: the watch notices, and no slot is kept meanwhile
                        if not is_infrastructure_error(exc):
                            log.exception("reading the pause state failed")

    def _read_at(self, key):
        return self.pause_seen.get(key, (float("-inf"), 0.0))[0]

    async def _watch_pauses(self):
        """Listen for the pauses set by any process (a 429's Retry-After), and notice at once when Redis is lost (the
        subscription's connection drops): then no slot is kept until the watch is back."""
        import redis.asyncio as aioredis  # lazy: heavy library, loaded on first use (as in the store above)
        from redis.asyncio.retry import Retry  # lazy: part of redis.asyncio, loaded with it
        from redis.backoff import NoBackoff  # lazy: part of redis, loaded with it

        client = aioredis.from_url(self.url, retry=Retry(NoBackoff(), 0))  # a lost connection is told, not hidden
        try:
            while True:
                pubsub = client.pubsub()
                try:
                    await pubsub.subscribe(PAUSE_CHANNEL)
                    while True:
                        message = await pubsub.get_message(timeout=None)
                        if message and message["type"] == "subscribe":
                            self.watching = True
                            self.subscribed.set()
                        elif message and message["type"] == "message":
                            key, seconds = message["data"].decode().rsplit(" ", 1)
                            key = key.removesuffix(":pause")
                            self._saw_pause(key, float(seconds))
                except Exception as exc:
                    if not is_infrastructure_error(exc):
                        log.exception("the pause watch failed")
                finally:
                    self._lose_watch()
                    await _quietly(pubsub.aclose())
                await asyncio.sleep(WATCH_RETRY)
        finally:
            await _quietly(client.aclose())

    def _lose_watch(self):
        self.watching = False
        if self.subscribed is not None:
            self.subscribed.clear()
        self.epoch += 1
        self.keep.clear()

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
        try:
            await self._wait_for_watch()
        except BaseException:  # cancelled (the loop or store closing): so are the acquires asked
            for _, future in asked:
                future.cancel()
            raise
        released = self.releasing.pop(key, [])
        for lease in released:
            self.keep.pop(lease, None)
        sent, epoch, watching = time.monotonic(), self.epoch, self.watching
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
        answers = [float(answer) for answer in answers]
        self._saw_pause(key, max(answers), read_at=sent)
        keep = watching and epoch == self.epoch and self.watching
        for (lease, future), answer in zip(asked, answers, strict=True):
            if answer == 0 and keep:
                self.keep[lease] = sent
                self.keeping[key] = sent
            if not future.done():
                future.set_result(answer)
            elif answer == 0:  # its caller gave up meanwhile: the slot goes back at once
                await self.release(key, lease)

    async def renew(self, key, lease_ids):
        if lease_ids:
            sent = time.monotonic()
            await self.renew_script(keys=[key + ":conc"], args=[LEASE_TTL, *lease_ids])
            for lease in lease_ids:
                if lease in self.keep:
                    self.keep[lease] = sent

    async def release(self, key, lease_id):
        """Give the slot back with this process's next acquire of the key, which usually follows at once (a worker
        takes its next unit); else with a flush at the loop's next turn. Either way before anyone waits a poll."""
        self._release_later(key, lease_id)

    def _release_later(self, key, lease_id):
        self.releasing.setdefault(key, []).append(lease_id)
        if self.flushing is None:
            self.flushing = asyncio.get_running_loop().call_soon(self._flush_soon)

    def _flush_soon(self):
        self.flushing = None
        if any(leases and key not in {k for k, _ in self.acquiring} for key, leases in self.releasing.items()):
            self._spawn(self.flush(keep={key for key, _ in self.acquiring}))

    async def flush(self, keep=()):
        """Remove the released leases no acquire has taken along (Redis away: they expire on their own); those of
        the keys in `keep` go with the acquires of those keys about to be sent."""
        releasing = {key: leases for key, leases in self.releasing.items() if key not in keep}
        self.releasing = {key: leases for key, leases in self.releasing.items() if key in keep}
        for key, leases in releasing.items():
            if not leases:  # each was kept for a next unit
                continue
            for lease in leases:
                self.keep.pop(lease, None)
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
        self._saw_pause(key, seconds)  # this process stops at once; the others when the watch tells them
        await self.pause_script(keys=[key + ":pause"], args=[seconds, PAUSE_CHANNEL])

    async def paused_for(self, key):
        return float(await self.paused_script(keys=[key + ":pause"]))

    async def close(self):
        for task in (self.watch, self.fresh):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.flush()
        await self.redis.aclose()


async def _quietly(closing):
    """Close a Redis client or subscription that may have lost its server already."""
    try:
        await closing
    except Exception:  # closing what Redis dropped: nothing left to do
        log.debug("closing a Redis connection failed", exc_info=True)


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
            lease = None if stop is not None and stop.is_set() else await self.store.reuse_slot(self.key)
            asked = uuid.uuid4().hex if lease is None else None
            while lease is None:
                if stop is not None and stop.is_set():
                    self.local.release()
                    return None
                wait, taken = await self.store.slot_unless_paused(self.key, self.max_concurrency, asked)
                if taken:
                    lease = asked
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
