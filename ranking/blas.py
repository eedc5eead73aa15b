"""BLAS on one thread while the ranking math runs (through threadpoolctl).

The heavy loops here are numpy element-wise work plus many small BLAS/LAPACK calls (100×100
solves). BLAS threads gain nothing on those, and after each call they spin waiting for more work,
taking the cores from the numpy threads that do the real work: on a busy 2-core machine that made
a bootstrap twice as slow.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from threadpoolctl import OpenBLASController, get_cached_controller

_P = ParamSpec("_P")
_R = TypeVar("_R")

# The OpenBLAS that numpy and scipy wheels bundle has one thread pool for the whole process, so
# the limit is process-wide too. threadpoolctl's own limiter restores what it saw on entry when
# its block ends; two overlapping blocks in different threads would then undo each other (the
# first to leave restores the original while the other still runs, and the second restores the
# 1 it saw, for good). Instead every block is counted here: the first one in sets the limit and
# the last one out restores the setting from before the first, whichever threads they run on.
_lock = threading.Lock()
_depth = 0
_limiter: Any = None  # threadpoolctl's limiter of the outermost block; it holds the original


def _release_control() -> None:
    """Let whichever thread is last out restore the setting.

    threadpoolctl lets only one thread at a time change a process-wide OpenBLAS pool, the
    first that does, until it leaves a `with threadpool_limits()` block. This module changes
    the setting without such a block (its entry and exit can be on different threads), so it
    hands that control back right after each change. Only a thread that holds it gives it up,
    so another user of threadpoolctl that holds it keeps it.
    """
    OpenBLASController.clear_controlling_thread()


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the block with BLAS on one thread, restoring its setting afterwards.

    Nested and concurrent use is counted (the bootstrap's worker threads fit inside a block, and
    two recomputes can overlap), so only the outermost exit restores the previous setting.
    """
    global _depth, _limiter
    with _lock:
        if _depth == 0:
            _limiter = get_cached_controller().limit(limits=1, user_api="blas")
            _release_control()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _limiter.restore_original_limits()
                _release_control()
                _limiter = None


def blas_single(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator form of `single_threaded_blas`."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with single_threaded_blas():
            return func(*args, **kwargs)

    return wrapper
