"""The bundled corpus, loaded once and checked against the shipped emulators' predicates."""

from __future__ import annotations

import pytest

from capplan.conformance.corpus import Corpus, load_corpus
from capplan.conformance.emulators import checks_by_protocol


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    return load_corpus(checks=checks_by_protocol())
