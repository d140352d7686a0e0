"""The remote tier of the compile cache: entries on a Redis server that a fleet
of machines shares (``TESSERA_REMOTE_CACHE=redis://host:port/db``).

    tier = remote_tier("redis://127.0.0.1:6379/0")    # one per URL and process
    tier.get(key)          # the stored bytes, or None (missing, or the server failed)
    tier.put(key, data)    # published, or dropped (the server failed)

The tier stores what :class:`~tessera.runtime.cache.CompileCache` hands it (an
entry with its checksum: the cache checks what comes back). A server that is
down, slow or refuses costs one warning and a local compile, never an error:
every request has a timeout (1 s unless the URL says ``?socket_timeout=``), is
not retried, and after a failure the tier stays off for :data:`RETRY_AFTER`
seconds, so that a dead server is not waited on call after call.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tessera.runtime.errors import InvalidOption

log = logging.getLogger("tessera.cache")

TIMEOUT = 1.0
"""Seconds a connection or a request may take (unless the URL sets ``socket_timeout``)."""
RETRY_AFTER = 30.0
"""Seconds the tier stays off after the server failed."""
PREFIX = "tessera:"
"""What every key tessera stores on the server starts with."""


class RemoteTier:
    """One Redis server as a key-value store of cache entries."""

    def __init__(self, url: str, timeout: float = TIMEOUT, retry_after: float = RETRY_AFTER):
        self.url = url
        self.timeout = timeout
        self.retry_after = retry_after
        self.hits = 0
        self.misses = 0
        self.failures = 0
        self._client: Any = None
        self._off_until = 0.0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RemoteTier({_without_password(self.url)!r})"

    def get(self, key: str) -> bytes | None:
        data = self._request("get", lambda c: c.get(PREFIX + key))
        if isinstance(data, bytes):
            self.hits += 1
            return data
        self.misses += 1
        return None

    def put(self, key: str, data: bytes) -> None:
        self._request("put", lambda c: c.set(PREFIX + key, data))

    @property
    def available(self) -> bool:
        """Whether requests go to the server now (not within :attr:`retry_after` of a failure)."""
        return time.monotonic() >= self._off_until

    def _request(self, what: str, fn) -> Any:
        if not self.available:
            return None
        try:
            return fn(self._connection())
        except Exception as e:  # noqa: BLE001 - any failure of the server or the client costs a local compile
            self._failed(what, e)
            return None

    def _connection(self) -> Any:
        with self._lock:
            if self._client is None:
                import redis
                from redis.backoff import NoBackoff
                from redis.retry import Retry

                self._client = redis.Redis.from_url(self.url, socket_timeout=self.timeout,
                                                    socket_connect_timeout=self.timeout,
                                                    retry=Retry(NoBackoff(), 0))
            return self._client

    def _failed(self, what: str, e: Exception) -> None:
        self.failures += 1
        self._off_until = time.monotonic() + self.retry_after
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001, S110 - a broken connection may fail to close; it is dropped
                pass
        log.warning("tessera: remote cache %s failed on %s (%s: %s); compiling locally, retrying in %.0f s",
                    _without_password(self.url), what, type(e).__name__, e, self.retry_after)


_tiers: dict[str, RemoteTier] = {}
_tiers_lock = threading.Lock()


def remote_tier(url: str) -> RemoteTier:
    """The tier of ``url``, one per process (so that a failure is seen by every cache using it)."""
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise InvalidOption(f"remote cache '{_without_password(url)}': expected a redis://host:port/db URL")
    with _tiers_lock:
        tier = _tiers.get(url)
        if tier is None:
            tier = _tiers[url] = RemoteTier(url)
        return tier


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
