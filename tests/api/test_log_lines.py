"""Log lines reach stderr whole, in order: info lines a few times a second, others at once."""

from __future__ import annotations

import io
import sys
import time

from api.observability import _Stderr


class BinaryStderr:
    def __init__(self) -> None:
        self.buffer = io.BytesIO()

    def lines(self) -> list[bytes]:
        # Only this module's lines: the apps of earlier tests may still drain theirs to sys.stderr.
        return [line for line in self.buffer.getvalue().splitlines() if b'"event":"t-' in line]


def binary_stderr(monkeypatch) -> BinaryStderr:
    """sys.stderr replaced by one with a binary layer, as a real stderr has. (Called in the test
    body: pytest's capture sets sys.stderr again between a fixture's setup and the test.)"""
    stream = BinaryStderr()
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


def test_info_lines_wait_for_the_drain_and_keep_their_order(monkeypatch):
    stream = binary_stderr(monkeypatch)
    out = _Stderr(interval_seconds=3600)
    out.write(b'{"level":"info","event":"t-a"}\n')
    out.write(b'{"level":"info","event":"t-b"}\n')
    assert stream.lines() == []
    out.drain()
    assert stream.lines() == [b'{"level":"info","event":"t-a"}', b'{"level":"info","event":"t-b"}']


def test_a_line_above_info_is_written_at_once_after_those_waiting(monkeypatch):
    stream = binary_stderr(monkeypatch)
    out = _Stderr(interval_seconds=3600)
    out.write(b'{"level":"info","event":"t-a"}\n')
    out.write(b'{"level":"error","event":"t-b"}\n')
    assert stream.lines() == [b'{"level":"info","event":"t-a"}', b'{"level":"error","event":"t-b"}']


def test_waiting_lines_are_written_within_the_interval_and_when_the_buffer_fills(monkeypatch):
    stream = binary_stderr(monkeypatch)
    out = _Stderr(interval_seconds=0.05)
    out.write(b'{"level":"info","event":"t-a"}\n')
    deadline = time.monotonic() + 5
    while not stream.lines() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.lines() == [b'{"level":"info","event":"t-a"}']
    small = _Stderr(interval_seconds=3600, limit_bytes=64)
    small.write(b'{"level":"info","event":"t-' + b"x" * 64 + b'"}\n')
    assert len(stream.lines()) == 2


def test_a_text_only_stderr_gets_text(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    out = _Stderr(interval_seconds=3600)
    out.write(b'{"level":"warning","event":"t-w"}\n')
    ours = [line for line in stream.getvalue().splitlines(keepends=True) if '"event":"t-' in line]
    assert ours == ['{"level":"warning","event":"t-w"}\n']
