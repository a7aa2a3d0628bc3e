"""How the compiled kernels are compiled: numba's options, and the loops over a batch.

``cache=True`` stores the machine code next to these files (or in ``NUMBA_CACHE_DIR``),
stamped with all of them (:mod:`.cache`); ``error_model="numpy"`` lets a division by zero
give inf or NaN (the kernels then return a status) instead of raising; ``contract`` lets
LLVM fuse a*b + c into one FMA instruction (one rounding instead of two).
"""

from __future__ import annotations

import numba as nb

from ..loops import serial_and_parallel as _serial_and_parallel_loops

OPTIONS = dict(cache=True, error_model="numpy", nogil=True, fastmath={"contract"})
# One state keeps the GIL: releasing and taking it back would cost ~80 ns, a sixth of the call.
SINGLE_OPTIONS = dict(OPTIONS, nogil=False)
CHUNK = 64                                       # states per call of a rows loop in batches

jit = nb.njit(**OPTIONS)
# The per-state cores and their helpers are inlined (numba IR) into the loop over states of
# their algorithm (``_<algo>_rows``): a call between compiled functions passes each array as a
# struct of ~9 words and counts references to it (atomic adds, on a line that the other cores
# write too): a fifth of the time of inverse dynamics, a quarter of forward dynamics.
inline = nb.njit(inline="always", **OPTIONS)


def serial_and_parallel(body):
    """A batch loop compiled twice, (serial, parallel) (:func:`dyn_plugin.loops.serial_and_parallel`)."""
    return _serial_and_parallel_loops(body, OPTIONS)
