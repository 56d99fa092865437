"""One strict loopback emulator per protocol; ``emulator_for`` finds a protocol's class."""

from __future__ import annotations

import importlib

from capplan.conformance.emulator import Emulator

#: the protocol modules capplan ships (each defines ``EMULATOR``, its :class:`Emulator` subclass)
PROTOCOL_MODULES: tuple[str, ...] = ("anthropic", "gemini", "openai_chat", "openai_responses")


def emulators() -> dict[str, type[Emulator]]:
    """Every shipped emulator class by its protocol."""
    found: dict[str, type[Emulator]] = {}
    for name in PROTOCOL_MODULES:
        cls: type[Emulator] = importlib.import_module(f"{__name__}.{name}").EMULATOR
        found[cls.protocol] = cls
    return found


def checks_by_protocol() -> dict[str, frozenset[str]]:
    """Each protocol's predicate names, for :func:`capplan.conformance.corpus.load_corpus`."""
    return {protocol: frozenset(cls.checks) for protocol, cls in emulators().items()}


def emulator_for(protocol: str) -> type[Emulator] | None:
    """The emulator class of ``protocol``, or ``None`` when capplan has none."""
    return emulators().get(protocol)
