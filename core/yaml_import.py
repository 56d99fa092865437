"""PyYAML, imported without compiling the regular expressions its modules build as they load.

Seam *yaml import* (``benchmarks/compiler_speed.py``, the lint row). ``import yaml`` compiles about
twenty regular expressions at import: the reader's test for unprintable characters (a class of
every printable Unicode range: about 5 ms by itself), the resolver's implicit scalar types and the
constructor's timestamp. capplan reads YAML through libyaml's event stream
(:mod:`capplan.core.yaml_fast`), which uses none of them, so ``capplan lint`` of one overlay spent
about 6 ms of its ~155 ms compiling patterns it never ran.

:func:`import_yaml` imports yaml the first time with each pattern that a ``yaml`` module compiles
made a :class:`LazyPattern`: the same pattern and flags, compiled the first time anything uses it.
Only calls made from yaml's own modules are deferred, and only while yaml is being imported;
``re.compile`` is itself again when the import ends, however it ends. Where yaml is imported
already, it is returned as it is. The reference mode imports it plainly.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from capplan.core.reference_mode import reference_mode

_YAML = "yaml"
#: the compiled pattern's names copied onto a LazyPattern once it is compiled (read without __getattr__ after)
_COPIED = ("match", "search", "fullmatch", "sub", "subn", "split", "findall", "finditer")
#: one import with the stand-in at a time: a second thread waits, then finds yaml imported (reentrant: an
#: import hook that asks for yaml while yaml is importing gets the module as far as it is, as `import` gives it)
_IMPORTING = threading.RLock()

Compile = Callable[..., "re.Pattern[Any]"]


class LazyPattern:
    """A regular expression compiled the first time it is used; it then answers as the compiled pattern.

    Its matching methods are the compiled pattern's own once it is compiled (copied onto it, so a
    later call costs what a call on the pattern costs); every other name is asked of the compiled
    pattern. Copied and deep-copied, it is itself (as a compiled pattern is); pickled, it is the
    compiled pattern.
    """

    def __init__(self, compile: Compile, pattern: Any, flags: Any) -> None:
        self._compile = compile
        self._source = pattern
        self._flags = flags
        self._real: re.Pattern[Any] | None = None

    @property
    def compiled(self) -> bool:
        """Whether something has used it yet."""
        return self._real is not None

    def real(self) -> re.Pattern[Any]:
        """The compiled pattern (compiled now if it was not yet)."""
        real = self._real
        if real is None:
            real = self._compile(self._source, self._flags)
            vars(self).update({name: getattr(real, name) for name in _COPIED})
            self._real = real
        return real

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_compile", "_source", "_flags", "_real"):
            raise AttributeError(name)  # the instance's own state, and dunders: never the pattern's
        return getattr(self.real(), name)

    def __repr__(self) -> str:
        return repr(self.real())

    def __copy__(self) -> LazyPattern:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> LazyPattern:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (re.compile, (self._source, self._flags))


def import_yaml() -> ModuleType:
    """The ``yaml`` module; imported the first time with its patterns compiled on first use."""
    loaded = sys.modules.get(_YAML)
    if loaded is not None:
        return loaded
    if reference_mode():
        return _plain_import()
    with _IMPORTING:
        loaded = sys.modules.get(_YAML)
        if loaded is not None:
            return loaded
        real = re.compile
        re.compile = deferring_for_yaml(real)
        try:
            return _plain_import()
        finally:
            re.compile = real


def deferring_for_yaml(real: Compile) -> Compile:
    """``re.compile`` that defers the patterns compiled from a ``yaml`` module and compiles every other at once."""

    def compile(pattern: Any, flags: Any = 0) -> Any:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if isinstance(caller, str) and (caller == _YAML or caller.startswith(_YAML + ".")):
            return LazyPattern(real, pattern, flags)
        return real(pattern, flags)

    return compile


def _plain_import() -> ModuleType:
    import yaml

    module: ModuleType = yaml
    return module
