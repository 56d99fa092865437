"""The operator overlay file (``--presets-file``): presets, providers overlay, litellm_models."""

# no `from __future__ import annotations`: pydantic then reads these annotations as objects
# instead of evaluating strings, a measurable share of every command's start-up

from typing import Literal

from pydantic import Field

from capplan.compiler.inputs.common import Strict
from capplan.compiler.inputs.preset_file import PresetBody, PresetEntry
from capplan.compiler.inputs.probe_block import ProbeChecks, ProbeEvidence
from capplan.core.default_factories import empty_dict, empty_list
from capplan.executor.binding import ProviderBinding


class LitellmModelDecl(Strict):
    """Capabilities declared for a model litellm's own map lacks. Flags are an allow-list."""

    supports_function_calling: bool = Field(False, description="Admit tools and tool_choice past litellm's map.")
    supports_reasoning: bool = Field(False, description="Admit reasoning_effort past litellm's map.")
    evidence: str = Field(min_length=1, pattern=r"\S", description="Dated observation that justifies the declaration (required).")


ReplayVerdict = Literal["consumes-all-turns", "in-loop-only", "accepted-ignored", "rejected",
                        "baseline-failed", "direct-lane-not-reached"]


class ReplayMeasurement(Strict):
    """A measured reasoning-replay verdict for one route, model and lane (from `capplan replay report --overlay`)."""

    verdict: ReplayVerdict = Field(description="What the provider did with replayed reasoning.")
    measured: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="Date of the measurement (YYYY-MM-DD).")
    complete: bool = Field(description="Whether every cell of the row was measured.")
    carriers: dict[str, dict[str, str]] = Field(
        default_factory=empty_dict, description="Carrier → position → result, e.g. {in_loop: 'consumed +412'}.")
    evidence: str = Field(min_length=1, pattern=r"\S", description="The dated claim, with the deltas it rests on.")
    fingerprint: str | None = Field(
        None, min_length=1, description="What the endpoint reported it was when measured (its system_fingerprint: "
        "server build, model and template); compared with reasoning_replay_checks.fingerprints by lint.")
    tool_choice: str | None = Field(
        None, min_length=1, description="The tool_choice the harness forced on turn 1 to reach step 2, if any.")


class ReplayChecks(Strict):
    """How lint judges the recorded replay evidence: its age, and what the endpoints serve today."""

    max_age_days: int = Field(180, ge=1, le=36500, description="A measurement older than this is a lint warning.")
    fingerprints: dict[str, dict[str, str]] = Field(
        default_factory=empty_dict, description="Route → model → the fingerprint served now; evidence measured "
        "against another one is a lint warning.")


class OverlayFile(Strict):
    """An operator overlay. Its presets are tried before the bundled ones."""

    presets: dict[str, PresetEntry] = Field(
        default_factory=empty_dict,
        description="Tried before bundled presets; a bundled preset of the same name is replaced wholesale.",
    )
    providers: dict[str, PresetBody] = Field(
        default_factory=empty_dict, description="Per-provider overlay, applied after the bundled providers overlay."
    )
    bindings: dict[str, ProviderBinding] = Field(
        default_factory=empty_dict,
        description="Provider bindings by provider key: a new provider (a self-hosted endpoint, an internal "
        "gateway), or field-level changes to a shipped one (only the fields written here change).",
    )
    litellm_models: dict[str, LitellmModelDecl] = Field(
        default_factory=empty_dict,
        description="Keyed by the model id '<provider>/<name>' (the plan's model.model_id, or its wire_model); "
        "becomes the plan's allowed_openai_params.",
    )
    reasoning_replay: dict[str, dict[str, dict[str, ReplayMeasurement]]] = Field(
        default_factory=empty_dict,
        description="Measured evidence, route → model → lane: whether replayed reasoning is consumed. "
        "The route is a provider key; a verdict sets the replay scope of that provider's plans for the model "
        "(consumes-all-turns, in-loop-only, accepted-ignored, rejected).",
    )
    reasoning_replay_checks: ReplayChecks = Field(
        default_factory=ReplayChecks, description="How old replay evidence may be, and the fingerprints it must match.")
    probe_evidence: ProbeEvidence = Field(
        default_factory=empty_list,
        description="What `capplan probe` measured, one entry per route (provider key, protocol, model as sent, "
        "gateway route): a refused value becomes a param_value_rules reject, and an accepted value lifts a reject, "
        "on the plans of that route only (the snippet `capplan probe --out` writes).",
    )
    probe_evidence_checks: ProbeChecks = Field(
        default_factory=ProbeChecks, description="How old probe evidence may be before lint warns.")

