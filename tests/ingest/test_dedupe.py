"""Recent keys: re-sent and replayed rows are recognised within the window, and only then."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.dedupe import BUCKET_SECONDS, WINDOW_SECONDS, RecentKeys


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_claim_keeps_the_first_of_each_key_and_remembers_it():
    keys = RecentKeys()
    assert keys.claim([1, 2, 1]) == [True, True, False]
    assert keys.claim([2, 3]) == [False, True]
    assert 3 in keys and len(keys) == 3


def test_filter_new_only_looks():
    keys = RecentKeys()
    keys.add_all([1])
    assert keys.filter_new([1, 2, 2]) == [False, True, False]
    assert 2 not in keys


def test_released_keys_can_be_claimed_again():
    keys = RecentKeys()
    keys.claim([1, 2])
    keys.release([1])
    assert keys.claim([1, 2]) == [True, False]


def test_keys_are_forgotten_after_the_window_and_kept_inside_it():
    clock = Clock()
    keys = RecentKeys(clock=clock)
    keys.claim([1])
    clock.now += WINDOW_SECONDS - BUCKET_SECONDS
    keys.claim([2])
    assert keys.filter_new([1, 2]) == [False, False]
    clock.now += 2 * BUCKET_SECONDS
    assert keys.claim([3]) == [True]
    assert keys.filter_new([1, 2]) == [True, False]
    assert len(keys) == 2


def test_a_key_added_twice_lives_in_one_bucket():
    clock = Clock()
    keys = RecentKeys(clock=clock)
    keys.add_all([1])
    clock.now += WINDOW_SECONDS / 2
    keys.add_all([1])
    clock.now += WINDOW_SECONDS / 2 + 2 * BUCKET_SECONDS
    keys.add_all([])
    assert 1 not in keys


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=0, max_value=40), max_size=12), max_size=8))
def test_claim_answers_as_a_plain_set_would(batches):
    keys, seen = RecentKeys(), set()
    for batch in batches:
        expected = []
        for key in batch:
            expected.append(key not in seen)
            seen.add(key)
        assert keys.claim(batch) == expected
    assert len(keys) == len(seen)
