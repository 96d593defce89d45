"""The durable log as a Redis Stream, for API processes that share one lake (the README's Scaling out).

An append is one stream entry (XADD); a writer thread gathers concurrent appends and sends each group
as one pipeline. Redis answers a write only after its append-only file was fsync'ed when it runs with
``appendonly yes`` and ``appendfsync always`` (it syncs once per turn of its event loop, before any
reply: group commit again); the log checks both settings when it opens and refuses any other, so a
2xx means on a Redis log what it means on the file log.

The flusher reads entries through the consumer group ``lake``, always as the one consumer ``lake``
(flushes are serialised by the flush lock in the shared data directory). Entries a flush read and did
not acknowledge (its process died, or its write failed) stay pending for that consumer, and the next
flush reads them first: a flush is acknowledged, and its entries deleted, only after its Parquet files
are in the lake, so no entry is lost; the flusher checks every key against the lake's, so none is
stored twice.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis

from ingest.dedupe import CLAIMED, WINDOW_SECONDS
from ingest.log import Chunk, LogWriteFailed
from warehouse.group_commit import GroupCommit

GROUP = CONSUMER = "lake"
PAYLOAD = b"d"

# Claims a batch's event ids (SET NX, expiring with the dedupe window) and logs its line when any id
# is new, in one step: a claim never exists without its line, so nothing claimed is ever released,
# and a re-send after an append whose answer was lost is rightly a duplicate. A line with some ids
# claimed before carries a mask (field "m", "1" for each row to store), so every id is stored from
# the one entry that claimed it, and the flusher needs no check of its own.
# KEYS: the stream, then one key per event id; ARGV: the window in seconds, the line, the claim's value.
_CLAIM_AND_LOG = """
local fresh, mask, new_ids = {}, {}, 0
for i = 2, #KEYS do
  local new = redis.call('SET', KEYS[i], ARGV[3], 'NX', 'EX', ARGV[1])
  fresh[i - 1] = new and 1 or 0
  mask[i - 1] = new and '1' or '0'
  if new then new_ids = new_ids + 1 end
end
if new_ids == #KEYS - 1 then
  redis.call('XADD', KEYS[1], '*', 'd', ARGV[2])
elseif new_ids > 0 then
  redis.call('XADD', KEYS[1], '*', 'd', ARGV[2], 'm', table.concat(mask))
end
return fresh
"""
MASK = b"m"

# A stream entry as XREADGROUP answers it: its id and fields (none for an entry XDEL'ed while pending).
Entry = tuple[bytes, dict[bytes, bytes] | None]


@dataclass(frozen=True)
class _Claiming:
    payload: bytes
    keys: list[bytes]


class RedisLogRefused(RuntimeError):
    """This Redis cannot be the log of this process."""


class LogNotDurable(RedisLogRefused):
    pass


class LogOfAnotherDataDir(RedisLogRefused):
    pass


# The id of the data directory a Redis log feeds, kept in both: a process pointed at another data
# directory (a typo in AISLE_DATA_DIR, a default ./data) would otherwise move this install's rows
# into a lake nobody reads.
DATA_DIR_ID_KEY = "aisle:log:data-dir"
DATA_DIR_ID_FILE = "log-id"


def stream_key(table: str) -> str:
    return f"aisle:log:{table}"


def check_durable(client: redis.Redis) -> None:
    """Refuse a Redis that would answer a write before it is on disk."""
    try:
        answer = client.config_get("append*").items()
        config = {_text(k): _text(v) for k, v in answer if k is not None and v is not None}
    except redis.ResponseError as exc:
        raise LogNotDurable(f"cannot read Redis' persistence settings (CONFIG GET): {exc}") from exc
    if config.get("appendonly") != "yes" or config.get("appendfsync") != "always":
        raise LogNotDurable(
            "the Redis log needs `appendonly yes` and `appendfsync always` (Redis then syncs its "
            f"append-only file before it answers a write); this Redis has appendonly={config.get('appendonly')}, "
            f"appendfsync={config.get('appendfsync')}"
        )


def bind_data_dir(client: redis.Redis, data_dir: Path) -> None:
    """Claim this Redis log for ``data_dir`` (the first process to use it does), or refuse."""
    client.set(DATA_DIR_ID_KEY, _data_dir_id(data_dir), nx=True)
    check_data_dir(client, data_dir)


def is_bound(client: redis.Redis) -> bool:
    """Whether some data directory uses this Redis log already."""
    return bool(client.exists(DATA_DIR_ID_KEY))


def check_data_dir(client: redis.Redis, data_dir: Path) -> None:
    """Refuse a Redis log bound to another data directory than ``data_dir`` (without naming one)."""
    bound = client.get(DATA_DIR_ID_KEY)
    if bound is None:
        return
    path = data_dir / DATA_DIR_ID_FILE
    ours = path.read_text().strip() if path.exists() else None
    if _text(bound) != ours:
        has = f"has id {ours} ({path})" if ours else "has none"
        raise LogOfAnotherDataDir(
            f"this Redis log feeds the data directory with id {_text(bound)}, and {data_dir.resolve()} {has}; "
            "every process of an install needs the same AISLE_DATA_DIR"
        )


def _data_dir_id(data_dir: Path) -> str:
    path = data_dir / DATA_DIR_ID_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    # "x": the first process makes it; another one that raced it reads it below.
    with contextlib.suppress(FileExistsError), open(path, "x") as handle:
        handle.write(uuid.uuid4().hex)
        handle.flush()
        os.fsync(handle.fileno())
    for _ in range(100):  # a file its maker is still writing reads empty for an instant
        if ident := path.read_text().strip():
            return ident
        time.sleep(0.01)
    raise LogOfAnotherDataDir(f"{path} is empty; remove it and start again")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class StreamLog(GroupCommit):
    def __init__(
        self,
        client: redis.Redis,
        table: str,
        *,
        directory: Path,
        claim_seconds: int = WINDOW_SECONDS,
        max_group: int = 4096,
        entries_per_read: int = 4096,
    ) -> None:
        """``directory``: where this table's flush lock lives (in the data directory every process
        of the install shares); ``claim_seconds``: how long a claimed key stays claimed."""
        self.client = client
        self.key = stream_key(table)
        self.claim_seconds = claim_seconds
        self.directory = directory
        self.entries_per_read = entries_per_read
        directory.mkdir(parents=True, exist_ok=True)
        try:
            client.xgroup_create(self.key, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        super().__init__(name=f"stream-{table}", max_group=max_group)

    async def append_claiming(self, payload: bytes, keys: list[bytes]) -> list[bool]:
        """Claim ``keys`` and log ``payload`` when any of them is new; which ones were. Without keys
        (a batch with no valid event) nothing is sent."""
        return await self.call(_Claiming(payload, keys)) if keys else []

    def append_claiming_sync(self, payload: bytes, keys: list[bytes]) -> list[bool]:
        return self.submit(_Claiming(payload, keys)).result() if keys else []

    def _write(self, items: list[bytes | _Claiming]) -> list[list[bool] | None | Exception]:
        pipe = self.client.pipeline(transaction=False)
        for item in items:
            if isinstance(item, _Claiming):
                arguments = (self.claim_seconds, item.payload, CLAIMED)
                pipe.eval(_CLAIM_AND_LOG, 1 + len(item.keys), self.key, *item.keys, *arguments)
            else:
                pipe.xadd(self.key, {PAYLOAD: item})
        try:
            answers = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            # Some items of the group may have been logged: their clients retry, and the flusher
            # stores each key once.
            raise LogWriteFailed(f"Redis did not take the append: {exc}") from exc
        results: list[list[bool] | None | Exception] = []
        for item, answer in zip(items, answers, strict=True):
            if isinstance(answer, Exception):
                results.append(LogWriteFailed(f"Redis refused the append: {answer}"))
            else:
                results.append([bool(flag) for flag in answer] if isinstance(item, _Claiming) else None)
        return results

    def close(self) -> None:
        self._stop_writer()

    # --- reading, for the flusher -------------------------------------------------------------------

    def chunks(self) -> Iterator[Chunk]:
        """Pending entries first (read by an earlier flush, never acknowledged), then the new ones up
        to the last entry the stream held when this call began."""
        last = self.client.xinfo_stream(self.key)["last-generated-id"]
        start: bytes | str = "0"
        while True:  # pending: XREADGROUP from an id lists this consumer's unacknowledged entries
            entries = self._read(start)
            if not entries:
                break
            start = entries[-1][0]
            yield self._chunk(entries, replay=True)
        while True:
            entries = self._read(">")
            if not entries:
                return
            yield self._chunk(entries, replay=False)
            if _entry_id(entries[-1][0]) >= _entry_id(last):
                return

    def _read(self, start: bytes | str) -> list[Entry]:
        answer = self.client.xreadgroup(GROUP, CONSUMER, {self.key: start}, count=self.entries_per_read)
        if not answer:
            return []
        assert isinstance(answer, list)  # RESP2, the client's protocol, answers [[stream, entries]]
        return answer[0][1]

    def _chunk(self, entries: list[Entry], *, replay: bool) -> Chunk:
        ids = [entry_id for entry_id, _ in entries]
        # An entry XDEL'ed while pending reads as an id without fields.
        data = b"".join(fields[PAYLOAD] for _, fields in entries if fields and MASK not in fields)
        masked = tuple(
            (fields[PAYLOAD], tuple(flag == ord("1") for flag in fields[MASK]))
            for _, fields in entries
            if fields and MASK in fields
        )
        return Chunk(data, replay, lambda: self._acknowledge(ids), masked)

    def _acknowledge(self, ids: list[bytes]) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.xack(self.key, GROUP, *ids)
        pipe.xdel(self.key, *ids)
        pipe.execute()

    def pending(self) -> int:
        """Entries read by a flush and not yet acknowledged."""
        return self.client.xpending(self.key, GROUP)["pending"]

    def length(self) -> int:
        return self.client.xlen(self.key)

    def oldest_age_seconds(self, now_ms: int) -> float | None:
        """How long the oldest entry not yet in the lake has waited (None when none waits)."""
        first = self.client.xrange(self.key, count=1)
        if not first:
            return None
        entry_id = first[0][0]
        assert entry_id is not None  # XRANGE answers every entry with its id
        return max(0.0, (now_ms - _entry_id(entry_id)[0]) / 1000)


def _entry_id(value: bytes | str) -> tuple[int, int]:
    millis, _, sequence = _text(value).partition("-")
    return int(millis), int(sequence or 0)
