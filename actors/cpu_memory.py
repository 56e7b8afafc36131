"""A CPU trainer hands a long row's freed activations back to the operating system.

glibc's ``malloc`` serves a block under its mmap threshold from a heap arena, and a freed block stays in
the arena for reuse; the threshold itself rises (up to 32 MiB) each time a larger mapped block is freed.
A long row's activations are mostly such blocks (8,192 positions x 576 features in float32 are 18 MiB),
so the arenas grow past what the row needs at once, and keep it after the row: the host counts that
memory as used, and Ray's memory monitor kills the trainer. Measured on one SmolLM2 row of 4,096 tokens
with checkpointing (``python -m benchmarks.cpu_checkpointing``, one run each), glibc's default peaked
4.9 GiB above the loaded model and still held 4.6 after the row; with every block from 128 KiB mapped on
its own, 1.0 and 0.5. Mapping costs time (each new mapping's pages are faulted in and zeroed), so the
trainer maps blocks only for the micro-batches it checkpoints, and trims the heap after each of them
(``actors.trainer.checkpoint_long_micro_batches``). A block the heap's free space can serve is still
served from it, so a trainer whose heap grew in earlier micro-batches gains less than that benchmark
(which maps from the start).

Other C libraries (musl, macOS) are left as they are: each function returns whether it did anything. An
allocator preloaded in glibc's place (``LD_PRELOAD`` of jemalloc or tcmalloc) ignores both calls.
"""

from __future__ import annotations

import ctypes
import logging
import platform
from functools import cache
from typing import Any

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter number for the mmap threshold (``malloc.h``)."""
MAPPED_FROM_BYTES = 128 * 1024
"""Long micro-batches: every block from glibc's own starting threshold is its own mapping."""
HEAP_UP_TO_BYTES = 32 * 1024 * 1024
"""Other micro-batches after a long one: blocks up to the ceiling of glibc's dynamic threshold come from the
heap. Setting the threshold ends the dynamic rise for the process, so the ceiling stands in for it (a
trainer's dynamic threshold climbs to its largest freed activation, 18 MiB for an 8,192-token SmolLM2 row)."""


def on_glibc() -> bool:
    """Whether this process's C library is glibc (the only one these settings apply to)."""
    return platform.libc_ver()[0] == "glibc"


@cache
def _libc() -> Any:
    """glibc's ``mallopt`` and ``malloc_trim`` with their C signatures, loaded once."""
    libc = ctypes.CDLL(None)
    libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


def map_large_blocks(enabled: bool) -> bool:
    """``enabled``: blocks from ``MAPPED_FROM_BYTES`` are mapped on their own and unmapped when freed;
    else blocks up to ``HEAP_UP_TO_BYTES`` come from the heap again. ``False``: not glibc, nothing set."""
    if not on_glibc():
        return False
    threshold = MAPPED_FROM_BYTES if enabled else HEAP_UP_TO_BYTES
    if not _libc().mallopt(M_MMAP_THRESHOLD, threshold):
        log.warning("glibc refused mallopt(M_MMAP_THRESHOLD, %d): the threshold stays as it was", threshold)
        return False
    return True


def release_free_heap() -> bool:
    """Hand the heap's free pages back to the operating system (``malloc_trim(0)``). ``False``: not glibc,
    or nothing to hand back."""
    return on_glibc() and bool(_libc().malloc_trim(0))
