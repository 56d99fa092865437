"""The run-level manifest written beside the plans: every input file's digest, and each plan's fingerprint.

Input digests are facts about a run, not about one model, so they live here rather than in
each plan: a change to one input then changes only the plans it affects, plus this one file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from capplan.core.canonical import canonical_bytes, sha256_hex

if TYPE_CHECKING:
    from capplan.compiler.loading import Inputs

MANIFEST_FILE = "manifest.json"
MANIFEST_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class InputDigest(_Frozen):
    """One input file of the run."""

    path: str = Field(description="Stable name: path relative to the project root, 'bundled:<file>' for bundled "
                                  "data, 'external:<file>' for a file outside the project root.")
    sha256: str = Field(description="sha256 of the file's bytes.")


class Manifest(_Frozen):
    """What one `capplan compile` read and wrote."""

    manifest_version: Literal[1] = Field(description="Shape version of this file.")
    plan_version: int = Field(description="plan_version of the plans beside it.")
    inputs: dict[str, InputDigest] = Field(
        description="Every input file by role: presets, providers, pricing, catalogue or run_config, overlay.N.")
    models_fingerprint: str = Field(description="sha256 over the presets, providers, pricing and catalogue digests.")
    plans: dict[str, str] = Field(description="Model key -> the fingerprint of its plan file.")

    def to_bytes(self) -> bytes:
        """Canonical file content."""
        return canonical_bytes(self.model_dump(mode="json"))


def input_digests(inputs: Inputs) -> dict[str, InputDigest]:
    """Every input file of a compilation, by role."""
    roles = {
        "presets": inputs.presets.source,
        "providers": inputs.providers.source,
        "pricing": inputs.pricing.source,
        inputs.run_role: inputs.run.source,
    }
    out = {role: InputDigest(path=s.stable_name, sha256=s.sha256) for role, s in roles.items()}
    for i, ov in enumerate(inputs.overlays, start=1):
        out[f"overlay.{i}"] = InputDigest(path=ov.source.stable_name, sha256=ov.source.sha256)
    return out


def models_fingerprint(inputs: Inputs) -> str:
    """sha256 over the digests of presets, providers, pricing and the catalogue / run config."""
    parts = {role: s.sha256 for role, s in (("presets", inputs.presets.source), ("providers", inputs.providers.source),
                                            ("pricing", inputs.pricing.source), (inputs.run_role, inputs.run.source))}
    return sha256_hex(canonical_bytes(parts))


def build_manifest(inputs: Inputs, fingerprints: Mapping[str, str]) -> Manifest:
    """The manifest of one compilation; ``fingerprints``: each compiled model key's plan fingerprint."""
    from capplan.executor.plan import PLAN_VERSION

    return Manifest(manifest_version=MANIFEST_VERSION, plan_version=PLAN_VERSION, inputs=input_digests(inputs),
                    models_fingerprint=models_fingerprint(inputs), plans=dict(sorted(fingerprints.items())))
