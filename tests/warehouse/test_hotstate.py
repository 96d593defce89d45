"""One contract for the hot state, run against the in-process implementation and a real redis-server."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import redis

from tests.servers import free_port
from warehouse.hotstate import HotState, InProcessHotState, RedisHotState, WindowCount, open_hot_state


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Backend:
    hot: HotState
    advance: Callable[[float], None]  # let this many seconds pass


@pytest.fixture(params=["in-process", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request) -> Iterator[Backend]:
    if request.param == "in-process":
        clock = FakeClock()

        def advance(seconds: float) -> None:
            clock.now += seconds

        yield Backend(InProcessHotState(clock=clock), advance)
    else:
        server = request.getfixturevalue("redis_server")
        # A prefix of its own per test: nothing leaks between tests sharing the session's redis-server.
        yield Backend(RedisHotState(server.url, prefix=f"test-{uuid.uuid4().hex}:"), time.sleep)


def test_hits_count_up_within_a_window(backend):
    hot = backend.hot
    assert hot.hit("a", window_seconds=60).count == 1
    assert hot.hit("a", window_seconds=60).count == 2
    assert hot.hit("a", window_seconds=60, amount=5).count == 7
    assert hot.hit("b", window_seconds=60).count == 1  # keys are independent


def test_reset_in_counts_down_from_the_first_hit(backend):
    first = backend.hot.hit("w", window_seconds=60)
    assert first.reset_in in (59, 60)
    # A later hit does not extend the window.
    assert backend.hot.hit("w", window_seconds=600).reset_in in (59, 60)


def test_a_fresh_window_never_announces_more_than_its_length():
    # At this instant (now + 60) - now is 60.000000000007 in floating point.
    clock = FakeClock()
    clock.now = 65527.887857885995
    hot = InProcessHotState(clock=clock)
    assert hot.hit("f", window_seconds=60) == WindowCount(1, 60)
    assert hot.hit("f", window_seconds=60) == WindowCount(2, 60)
    assert hot.peek("f") == WindowCount(2, 60)


def test_the_window_resets_after_it_ends(backend):
    hot = backend.hot
    for _ in range(3):
        hot.hit("r", window_seconds=1)
    assert hot.peek("r").count == 3
    backend.advance(1.2)
    assert hot.peek("r") == WindowCount(0, 0)
    after = hot.hit("r", window_seconds=1)
    assert after == WindowCount(1, 1)


def test_peek_reads_without_counting(backend):
    hot = backend.hot
    assert hot.peek("p") == WindowCount(0, 0)
    hot.hit("p", window_seconds=60)
    hot.hit("p", window_seconds=60)
    assert hot.peek("p").count == 2
    assert hot.peek("p").count == 2
    assert hot.peek("p").reset_in in (59, 60)
    assert hot.hit("p", window_seconds=60).count == 3
    assert hot.peek("never-hit").count == 0


def test_clear_forgets_a_counter(backend):
    hot = backend.hot
    for _ in range(4):
        hot.hit("c", window_seconds=60)
    hot.hit("other", window_seconds=60)
    hot.clear("c")
    assert hot.peek("c") == WindowCount(0, 0)
    assert hot.hit("c", window_seconds=60).count == 1
    assert hot.peek("other").count == 1  # only the named key
    hot.clear("no-such-key")  # clearing nothing is fine


def test_concurrent_hits_are_counted_exactly(backend):
    hot = backend.hot
    counts: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        mine = [hot.hit("busy", window_seconds=60).count for _ in range(50)]
        with lock:
            counts.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert hot.peek("busy").count == 400
    # Every hit saw its own count: no two hits were merged or lost.
    assert sorted(counts) == list(range(1, 401))


def test_hits_from_the_event_loop_count_with_the_others_exactly(backend):
    """``hit_async``, as the events route counts: concurrent hits go to Redis together."""
    hot = backend.hot

    async def hit_many() -> list[int]:
        windows = await asyncio.gather(*(hot.hit_async("loop", window_seconds=60) for _ in range(200)))
        return [w.count for w in windows]

    assert hot.hit("loop", window_seconds=60).count == 1
    counts = asyncio.run(hit_many())
    assert sorted(counts) == list(range(2, 202))
    assert {w.reset_in for w in [hot.peek("loop")]} <= {59, 60}
    assert hot.hit("loop", window_seconds=60).count == 202


def test_ping_answers(backend):
    assert backend.hot.ping() is None


def test_open_hot_state_picks_redis_only_when_a_url_is_given():
    assert isinstance(open_hot_state(None), InProcessHotState)
    assert isinstance(open_hot_state("redis://127.0.0.1:1/0"), RedisHotState)


def test_redis_ping_fails_when_nothing_listens():
    hot = RedisHotState(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(redis.ConnectionError):
        hot.ping()


@pytest.mark.redis
def test_two_redis_clients_share_counters(redis_server):
    prefix = f"test-{uuid.uuid4().hex}:"
    one = RedisHotState(redis_server.url, prefix=prefix)
    two = RedisHotState(redis_server.url, prefix=prefix)
    one.hit("shared", window_seconds=60)
    assert two.hit("shared", window_seconds=60).count == 2


# --- cached values (the same contract on both backends) ------------------------------------------


def test_cached_values_round_trip_expire_and_clear_by_prefix(redis_server):
    import uuid

    from warehouse.hotstate import InProcessHotState, RedisHotState

    clock = [0.0]
    backends = [
        InProcessHotState(clock=lambda: clock[0]),
        RedisHotState(redis_server.url, prefix=f"t{uuid.uuid4().hex}:"),
    ]
    for hot in backends:
        assert hot.get_value("cohort:s1:a") is None
        hot.set_value("cohort:s1:a", b"one", ttl_seconds=60)
        hot.set_value("cohort:s1:b", b"two", ttl_seconds=60)
        hot.set_value("cohort:s2:a", b"other site", ttl_seconds=60)
        assert hot.get_value("cohort:s1:a") == b"one"
        assert hot.delete_prefix("cohort:s1:") == 2
        assert hot.get_value("cohort:s1:b") is None
        assert hot.get_value("cohort:s2:a") == b"other site"
    clock[0] = 61.0
    assert backends[0].get_value("cohort:s2:a") is None


def test_set_value_if_absent_sets_once_until_the_value_expires(backend):
    hot = backend.hot
    assert hot.set_value_if_absent("once", b"first", ttl_seconds=1) is True
    assert hot.set_value_if_absent("once", b"second", ttl_seconds=1) is False
    assert hot.get_value("once") == b"first"
    hot.set_value("taken", b"x", ttl_seconds=60)
    assert hot.set_value_if_absent("taken", b"y", ttl_seconds=60) is False
    backend.advance(1.2)
    assert hot.get_value("once") is None
    assert hot.set_value_if_absent("once", b"third", ttl_seconds=60) is True
    assert hot.get_value("once") == b"third"


def test_of_concurrent_set_value_if_absent_calls_exactly_one_wins(backend):
    hot = backend.hot
    wins: list[bool] = []
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        wins.append(hot.set_value_if_absent("claim", b"mine", ttl_seconds=60))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False] * 7 + [True]
