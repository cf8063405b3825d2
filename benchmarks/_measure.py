"""Timing and memory helpers shared by the benchmark scripts."""

import statistics
import time
import tracemalloc


def median_seconds(function, repeats):
    """Median wall-clock time of ``function()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_bytes(function):
    """Peak memory allocated during ``function()`` (tracemalloc sees numpy buffers)."""
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak
