"""Gallery order: examples by the number in their file name (plot_2 before plot_10)."""

import re
from pathlib import Path


class ExampleNumberSortKey:
    """Sort key for sphinx-gallery's ``within_subsection_order``."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __call__(self, filename):
        match = re.match(r"plot_(\d+)_", Path(filename).name)
        return (int(match.group(1)) if match else float("inf"), str(filename))
