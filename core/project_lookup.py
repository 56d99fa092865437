"""Finding the project file, without loading it (:mod:`capplan.core.project_file` reads it).

Every command that takes defaults from the project file looks for one first, and most runs have
none: the walk up from the working directory needs no model, so the project file's models are
imported only when a file is found (about 3 ms of ``capplan lint`` and ``capplan compile``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from capplan.core.input_limits import MAX_CONFIG_BYTES, InputLimitError, read_limited

#: the commands that take defaults from the project file (a group: which of its subcommands do)
PROJECT_COMMANDS: dict[str, Any] = {"compile": True, "explain": True, "diff": True, "lint": True,
                                    "trial": {"run": True, "report": True, "view": True}}

PROJECT_FILE = "capplan.yaml"
PYPROJECT = "pyproject.toml"


def find_project_file(start: Path | None = None) -> Path | None:
    """The nearest ``capplan.yaml`` or ``pyproject.toml`` with ``[tool.capplan]``, from ``start`` up.

    The walk ends at the filesystem root, or after the first folder that holds ``.git``.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and _has_capplan_table(pyproject):
            return pyproject
        if (folder / ".git").exists():
            return None
    return None


def _has_capplan_table(path: Path) -> bool:
    try:
        text = read_limited(path, MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except (OSError, InputLimitError):
        return False
    return re.search(r"^\s*\[\s*tool\s*\.\s*capplan\s*(\]|\.)", text, re.MULTILINE) is not None
