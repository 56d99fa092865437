"""How a plan names the files it was compiled from: never by absolute path.

A file inside the project root is named by its path relative to that root (POSIX
separators), whatever the current directory and however the path was spelled on the command
line. Bundled data is ``bundled:<file>``. A file outside the root, or inside an installed
package (a ``site-packages`` folder, whose path depends on the machine's Python), is named
by a label and its file name: ``data:<file>`` for a ``--data`` folder, ``external:<file>``
otherwise. The project root is the nearest folder, from the current directory up, that holds
``.git``; without one, the current directory.
"""

from __future__ import annotations

from pathlib import Path


def find_project_root(start: Path | None = None) -> Path:
    """The nearest ancestor of ``start`` (default: the current directory) holding ``.git``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


_INSTALLED = {"site-packages", "dist-packages"}


def is_installed_path(path: Path) -> bool:
    """Whether ``path`` lies inside an installed package folder (``site-packages``, ``dist-packages``)."""
    return bool(_INSTALLED & set(path.resolve().parts))


def stable_name(path: Path, root: Path, label: str = "external") -> str:
    """``path`` relative to ``root``, or ``<label>:<name>`` when it is not under it (or is installed)."""
    full = path.resolve()
    try:
        rel = full.relative_to(root.resolve())
    except ValueError:
        return f"{label}:{full.name}"
    if _INSTALLED & set(rel.parts):
        return f"{label}:{full.name}"
    return rel.as_posix()
