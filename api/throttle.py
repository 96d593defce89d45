"""Fixed-window throttles over the hot state, with the spec's rate-limit headers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from fastapi import Response

from api.errors import AppError, TooManyRequests
from warehouse.hotstate import HotState, WindowCount


@dataclass(frozen=True)
class Limit:
    name: str
    limit: int
    window_seconds: int


def rate_limit_headers(limit: Limit, window: WindowCount) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit.limit),
        "X-RateLimit-Remaining": str(max(0, limit.limit - window.count)),
        "X-RateLimit-Reset": str(window.reset_in or limit.window_seconds),
    }


def throttle(
    hot: HotState, response: Response | None, *, limit: Limit, subject: str, code: str = "RATE_LIMITED"
) -> dict[str, str]:
    """Count one request of ``subject`` against ``limit``; 429 with ``Retry-After`` once it is spent.
    Returns the rate-limit headers (also set on ``response`` when given)."""
    window = hot.hit(_key(limit, subject), window_seconds=limit.window_seconds)
    return _checked(window, response, limit=limit, code=code)


async def throttle_each_async(
    hot: HotState, *, limit: Limit, subjects: list[str], code: str = "RATE_LIMITED"
) -> dict[str, str]:
    """``throttle`` for the busiest route, counting without holding the event loop while Redis
    answers, for a request that speaks for several subjects (a batch naming several visitors): each is
    counted, the request is refused when any of them is spent, and the headers are those of the
    subject with the least left."""
    windows = [
        await hot.hit_async(_key(limit, subject), window_seconds=limit.window_seconds) for subject in subjects
    ]
    return _checked(max(windows, key=lambda window: window.count), None, limit=limit, code=code)


def _key(limit: Limit, subject: str) -> str:
    return f"rl:{limit.name}:{subject}"


def _checked(
    window: WindowCount, response: Response | None, *, limit: Limit, code: str, message: str | None = None
) -> dict[str, str]:
    headers = rate_limit_headers(limit, window)
    if window.count > limit.limit:
        raise TooManyRequests(
            message or f"Too many requests; retry in {window.reset_in} seconds",
            code=code,
            details={"limit": limit.limit, "windowSeconds": limit.window_seconds},
            headers={**headers, "Retry-After": str(window.reset_in)},
        )
    if response is not None:
        response.headers.update(headers)
    return headers


@contextmanager
def headers_on_errors(headers: dict[str, str]) -> Iterator[None]:
    """Errors raised inside still carry the rate-limit headers of a throttled route."""
    try:
        yield
    except AppError as exc:
        exc.headers = {**headers, **(exc.headers or {})}
        raise


class GuessThrottle:
    """Wrong guesses of a secret (an MFA code) per subject: once ``limit.limit`` guesses have failed
    within the window, every further guess answers 429 with ``Retry-After``, a right one too, until
    the window ends. A guess is counted before it is checked, so concurrent guesses cannot all slip
    under the limit; a right guess forgets the count, so what is counted is the failures since the
    last success."""

    def __init__(self, hot: HotState, *, limit: Limit, subject: str, code: str, message: str) -> None:
        self._hot = hot
        self._limit = limit
        self._key = _key(limit, subject)
        self._code = code
        self._message = message
        self._window: WindowCount | None = None

    def count_guess(self) -> None:
        """Count one guess about to be checked; 429 once the failures of the window are spent."""
        self._window = self._hot.hit(self._key, window_seconds=self._limit.window_seconds)
        _checked(self._window, None, limit=self._limit, code=self._code, message=self._message)

    def forget(self) -> None:
        """The guess was right: earlier failures no longer count."""
        self._hot.clear(self._key)
        self._window = WindowCount(0, 0)

    @property
    def headers(self) -> dict[str, str]:
        if self._window is None:
            self._window = self._hot.peek(self._key)
        return rate_limit_headers(self._limit, self._window)

    @contextmanager
    def sending_headers(self, response: Response) -> Iterator[None]:
        """Every answer of the block, errors too, carries this throttle's rate-limit headers."""
        try:
            yield
        except AppError as exc:
            exc.headers = {**self.headers, **(exc.headers or {})}
            raise
        response.headers.update(self.headers)
