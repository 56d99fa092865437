"""Record what tolokaforge 0.29.0 hands litellm for every comparison case, into golden/upstream/.

Run it in a venv of its own that has the upstream engine, never in capplan's (see the README's
"Contributing" section):

    python -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install tolokaforge==0.29.0 tolokaforge-models==1.8.0 litellm==1.110.2 pyyaml
    /tmp/tfvenv/bin/python tools/upstream_oracle.py            # rewrites golden/upstream/
    /tmp/tfvenv/bin/python tools/upstream_oracle.py --check    # exit 1 when a fixture is stale

For each catalogue model (the offline ``mock`` provider excepted: upstream answers it without
building a request), each call variant and each conversation of ``tools/upstream_cases.py``, it
configures upstream's ``LLMClient`` exactly as the case says, calls ``generate`` with
``litellm.completion`` replaced by a recorder inside this process only, and stores the kwargs
the engine passed (credentials redacted) or the error it raised while building them. capplan's
test suite compares its own requests against these files, field by field
(``tests/upstream/test_upstream_parity.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import upstream_cases as cases  # noqa: E402  (this folder is not a package in the upstream venv)

OUT = ROOT / "golden" / "upstream"
CATALOGUE = ROOT / "presets" / "catalogue.yaml"
REDACTED = "<redacted>"
#: a pinned-transport binding (nova) needs a key to build a request; it is redacted on both sides
CREDENTIALS = {"NOVA_API_KEY": "golden-credential"}


class _Recorded(Exception):
    """Never raised: the recorder returns a response so the engine's own retry loop stays out of it."""


def _environment() -> None:
    # the engine reads a gateway and credential overrides from the environment: none may leak in
    for name in list(os.environ):
        if name.startswith(("LLM_PROXY_", "TOLOKAFORGE_", "OPENROUTER_")):
            del os.environ[name]
    os.environ.update(CREDENTIALS)
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


def _reasoning(value: dict[str, Any] | None) -> Any:
    """capplan's request-file reasoning as upstream's StructuredReasoning (same blocks, its types)."""
    from tolokaforge.core.llm.reasoning import ReasoningBlock, StructuredReasoning

    if value is None:
        return None
    blocks, transports = [], set()
    for block in value.get("blocks", []):
        kind, extras = block["type"], tuple((k, v) for k, v in block.get("extras", {}).items())
        if kind in ("thinking", "redacted_thinking"):
            transports.add("anthropic_native")
        elif kind in ("reasoning_text", "encrypted"):
            transports.add("openrouter")
        # upstream has no separate OpenRouter block types: the transport says where they came from
        upstream_kind = {"reasoning_text": "thinking", "encrypted": "redacted_thinking"}.get(kind, kind)
        blocks.append(ReasoningBlock(type=upstream_kind, text=block.get("text", ""), signature=block.get("signature"),
                                     encrypted_data=block.get("encrypted_data"), extras=extras))
    if len(transports) > 1:
        raise ValueError(f"a case mixes block transports: {sorted(transports)}")
    return StructuredReasoning(blocks=tuple(blocks), summary=value.get("summary"),
                               transport=next(iter(transports), None))


def _messages(conversation: dict[str, Any]) -> list[Any]:
    from tolokaforge.core.models import Message, MessageRole, ToolCall

    out = []
    for msg in conversation["messages"]:
        role = msg["role"]
        if role == "user":
            out.append(Message(role=MessageRole.USER, content=msg["content"]))
        elif role == "tool":
            out.append(Message(role=MessageRole.TOOL, content=msg["content"], tool_call_id=msg["tool_call_id"]))
        else:
            calls = [ToolCall(id=c["id"], name=c["function"]["name"], arguments=json.loads(c["function"]["arguments"]))
                     for c in msg.get("tool_calls", [])]
            out.append(Message(role=MessageRole.ASSISTANT, content=msg.get("content") or "", tool_calls=calls or None,
                               reasoning=_reasoning(msg.get("reasoning"))))
    return out


def _response() -> Any:
    import litellm

    return litellm.ModelResponse(
        choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
        usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    )


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def record_case(block: dict[str, Any], variant: dict[str, Any], conversation: dict[str, Any]) -> dict[str, Any]:
    """Upstream's kwargs for one case, or the error it raised before sending."""
    from tolokaforge.core.llm import client as client_module
    from tolokaforge.core.llm.reasoning import ReasoningConfig
    from tolokaforge.core.models.model_config import ModelConfig

    seen: list[dict[str, Any]] = []

    def recorder(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return _response()

    call = dict(variant["call"])
    reasoning = call.pop("reasoning", None)
    original = client_module.completion
    client_module.completion = recorder
    try:
        config = ModelConfig(**block)
        llm = client_module.LLMClient(config)
        llm._retry_sleep = lambda _s: None
        llm.generate(system=conversation.get("system"), messages=_messages(conversation),
                     tools=conversation.get("tools") or None,
                     reasoning=ReasoningConfig(**reasoning) if reasoning is not None else None, **call)
    except Exception as exc:  # noqa: BLE001 - a refusal to build is the case's result
        if seen:
            raise
        return {"error": {"type": type(exc).__name__, "message": str(exc)[:400]}}
    finally:
        client_module.completion = original
    if len(seen) != 1:
        raise RuntimeError(f"expected one completion call, saw {len(seen)}")
    kwargs = _jsonable(seen[0])
    if "api_key" in kwargs:
        kwargs["api_key"] = REDACTED
    return {"kwargs": kwargs}


def catalogue() -> dict[str, dict[str, Any]]:
    import yaml

    models: dict[str, dict[str, Any]] = yaml.safe_load(CATALOGUE.read_text(encoding="utf-8"))["models"]
    return {key: entry for key, entry in models.items() if entry["provider"] != "mock"}


def record_all() -> dict[Path, bytes]:
    """Every fixture file's bytes."""
    files: dict[Path, bytes] = {}
    for key, entry in sorted(catalogue().items()):
        doc: dict[str, Any] = {"model": key, "cases": {}}
        for vname, variant in cases.VARIANTS.items():
            block = cases.model_config(entry, variant)
            for cname, conversation in cases.CONVERSATIONS.items():
                if not cases.applies(variant, conversation, entry["provider"]):
                    continue
                result = record_case(block, variant, conversation)
                result["case_digest"] = cases.case_digest(conversation, variant, block)
                doc["cases"][f"{vname}/{cname}"] = result
        files[OUT / f"{key}.json"] = _canonical(doc)
    files[OUT / "MANIFEST.json"] = _canonical({
        "engine": {name: metadata.version(name) for name in ("tolokaforge", "tolokaforge-models", "litellm")},
        "regenerate": "python tools/upstream_oracle.py  (in a venv with tolokaforge==0.29.0; see README)",
    })
    return files


def _canonical(doc: Any) -> bytes:
    return (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report stale or missing fixtures, write nothing")
    args = parser.parse_args(argv)
    try:
        import tolokaforge  # noqa: F401
    except ImportError:
        print("error: tolokaforge is not installed in this interpreter; run this script with the python of a "
              "venv that has tolokaforge==0.29.0 (see the README's Contributing section)", file=sys.stderr)
        return 2
    _environment()
    import logging

    logging.disable(logging.WARNING)
    files = record_all()
    stale = sorted(p for p, data in files.items() if not p.exists() or p.read_bytes() != data)
    unused = sorted(set(OUT.glob("*.json")) - set(files))
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)}")
        for path in unused:
            print(f"unused: {path.relative_to(ROOT)}")
        return 1 if stale or unused else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for path in stale:
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(files[path])
        tmp.replace(path)
        print(f"wrote: {path.relative_to(ROOT)}")
    for path in unused:
        path.unlink()
        print(f"removed: {path.relative_to(ROOT)}")
    cases_total = sum(len(json.loads(data)["cases"]) for p, data in files.items() if p.name != "MANIFEST.json")
    print(f"{cases_total} cases recorded for {len(files) - 1} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
