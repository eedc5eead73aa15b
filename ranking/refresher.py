"""The leaderboard kept current inside a web process, for deployments with no beat (the
embedded default and the demo): every ``RANKING_REFRESH_S`` seconds a daemon thread recomputes
it if votes came in since the last snapshot. With Redis and beat, the nightly task does this
and the refresher stays off."""

from __future__ import annotations

import logging
import threading

from django.db import close_old_connections

from ranking.services import leaderboard_refresh

log = logging.getLogger(__name__)

_running: Refresher | None = None
_lock = threading.Lock()


class Refresher:
    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leaderboard-refresher", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                snapshot = leaderboard_refresh()
                if snapshot is not None:
                    log.info("leaderboard refreshed: snapshot %s", snapshot.pk)
            except Exception:  # the next round may work; the published snapshot stays
                log.exception("leaderboard refresh failed")
            finally:
                close_old_connections()

    def stop(self) -> None:
        global _running
        self._stop.set()
        self._thread.join()
        with _lock:
            if _running is self:
                _running = None


def refresher_start(*, every_s: float) -> Refresher | None:
    """Start this process's refresher (one at most; None if one runs or ``every_s`` is 0)."""
    global _running
    if every_s <= 0:
        return None
    with _lock:
        if _running is not None:
            return None
        _running = Refresher(every_s)
        _running._thread.start()
        return _running
