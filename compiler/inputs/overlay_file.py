"""The operator overlay file (``--presets-file``): presets, providers overlay, litellm_models."""

from __future__ import annotations

from pydantic import Field

from compiler.inputs.common import Strict
from compiler.inputs.preset_file import PresetBody, PresetEntry


class LitellmModelDecl(Strict):
    """Capabilities declared for a model litellm's own map lacks. Flags are an allow-list."""

    supports_function_calling: bool = Field(False, description="Admit tools and tool_choice past litellm's map.")
    supports_reasoning: bool = Field(False, description="Admit reasoning_effort past litellm's map.")
    evidence: str = Field(min_length=1, description="Dated observation that justifies the declaration (required).")


class OverlayFile(Strict):
    """An operator overlay. Its presets are tried before the bundled ones."""

    presets: dict[str, PresetEntry] = Field(
        default_factory=dict,
        description="Tried before bundled presets; a bundled preset of the same name is replaced wholesale.",
    )
    providers: dict[str, PresetBody] = Field(
        default_factory=dict, description="Per-provider overlay, applied after the bundled providers overlay."
    )
    litellm_models: dict[str, LitellmModelDecl] = Field(
        default_factory=dict, description="Keyed by the litellm model id; becomes the plan's allowed_openai_params."
    )
