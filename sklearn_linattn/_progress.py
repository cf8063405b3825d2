"""Progress over chunks for ``verbose`` fits: a tqdm bar when tqdm is installed, plain
lines otherwise, and nothing for fits shorter than a couple of seconds."""

import sys
import time

_DELAY = 2.0  # seconds before anything is shown


class ChunkProgress:
    """Callable ``progress(n_done, n_total)`` reporting samples processed.

    Parameters
    ----------
    description : str
    stream : file-like, default=sys.stdout
    """

    def __init__(self, description, stream=None):
        self.description = description
        self.stream = sys.stdout if stream is None else stream
        self.start = time.perf_counter()
        self.last_line = self.start
        self.bar = None

    def __call__(self, n_done, n_total):
        now = time.perf_counter()
        if now - self.start < _DELAY:
            return
        if self.bar is None:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(
                    total=n_total, desc=self.description, unit="seq", file=self.stream
                )
            else:
                self.bar = False
        if self.bar:
            self.bar.update(n_done - self.bar.n)
            if n_done >= n_total:
                self.bar.close()
        elif now - self.last_line >= _DELAY or n_done >= n_total:
            self.last_line = now
            print(
                f"{self.description}: {n_done}/{n_total} sequences "
                f"({now - self.start:.0f} s)",
                file=self.stream,
            )
