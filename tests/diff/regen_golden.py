"""Rewrite the goldens of `capplan diff` outputs in tests/diff/golden/ (and delete unused ones).

Run from the repository root, then review the change:
    python -m tests.diff.regen_golden
"""

from __future__ import annotations

from tests.diff.golden_outputs import produce_in_temp
from tests.diff.scenario import GOLDEN


def main() -> None:
    """Write every golden case; remove files no case produces."""
    GOLDEN.mkdir(exist_ok=True)
    outputs = produce_in_temp()
    for name, (_, text) in sorted(outputs.items()):
        (GOLDEN / name).write_text(text, encoding="utf-8")
    for stale in sorted(set(p.name for p in GOLDEN.iterdir()) - set(outputs)):
        (GOLDEN / stale).unlink()
        print(f"removed unused golden {stale}")
    print(f"wrote {len(outputs)} golden file(s) to {GOLDEN}")


if __name__ == "__main__":
    main()
