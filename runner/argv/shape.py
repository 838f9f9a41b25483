"""What a command asks of the shape of a twin of its model."""

from __future__ import annotations

from driftmatrix.runner.argv.context import context_length
from driftmatrix.runner.argv.parallel import ranks_of


def twin_shape(argv: list[str]) -> dict[str, int]:
    """What the command asks of a twin's shape: its parallel sizes (`tp`, `pp`, `dp`, `ep`:
    parallel.ranks_of) and, where it sets one, its context length (`context`), which a twin from
    class defaults is given (twin_split.fit_context)."""
    r, n = ranks_of(argv), context_length(argv)
    return {"tp": r.tp, "pp": r.pp, "dp": r.dp, "ep": r.ep, **({"context": n} if n else {})}
