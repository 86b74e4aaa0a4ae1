"""Helper programs a worker starts (a browser, an office suite): tied to the worker's life.

The supervisor kills a worker's whole process group when it times out or runs out of
memory; a child that starts its own session escapes that. A child started through
`pdeathsig_argv()` stays in the worker's group and is also killed by the kernel when the
worker dies (Linux's parent-death signal, set by util-linux's `setpriv`), so no helper
outlives the job that started it.
"""

from __future__ import annotations

import shutil

__all__ = ["pdeathsig_argv"]


def pdeathsig_argv() -> list[str]:
    """The argv prefix that gives the program after it SIGKILL on the worker's death
    (empty when `setpriv` is missing: the process group still reaches the child)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []
