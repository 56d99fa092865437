"""``capplan send``: send a request file through a plan and print the parsed result."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from capplan.cli.common import request_options

from capplan.cli.preview_cmd import placed
from capplan.core.canonical import canonical_bytes
from capplan.core.errors import ExitCode, UserError
from capplan.executor.errors import ResponseShapeError
from capplan.core.redaction import redact_text, redact_value, standard_streams_redacted


class ProviderCallFailed(UserError):
    """The call was sent and failed (a refusal, a timeout, a spent key): not the input's fault, exit 1."""

    code = "PROVIDER"
    exit_code = ExitCode.FINDINGS


@click.command("send")
@request_options
@click.option(
    "--format", "fmt", type=click.Choice(["json", "text"]), default="text", show_default=True,
    help="text: a readable summary; json: the whole result as canonical JSON.",
)
def send_cmd(plan_path: str, api_base: str | None, fmt: str, request_file: str) -> None:
    """Send REQUEST_FILE through the plan and print text, tool calls, reasoning, usage, cost, parser errors.

    Credentials come from the environment (the binding names the variable, e.g. OPENROUTER_API_KEY);
    when that variable is unset or empty, nothing is sent and the command exits 2 naming it (unless
    LLM_PROXY_BASE_URL with LLM_PROXY_API_KEY routes the call through a gateway). Every credential
    value in play (the key variable, litellm's own key variable for a binding that names none,
    rotation keys, the gateway key and every LLM_PROXY_HEADERS value), URL userinfo and key-like
    query parameters (api_key=, key=, token=, ...) are redacted from every line printed, provider
    error bodies and the model's own text included.

    \b
      capplan send --plan plans/mock-echo.json golden/conversations/dict_map_tools.json   # offline
      capplan send --plan plans/qwen3-32b.json request.json --format json

    Exit codes: 0 ok, 1 the provider call failed,
    2 input error (plan, request, settings the plan refuses, missing credential).
    """
    # litellm and the SDKs print on their own; whatever they print passes the redactor too
    with standard_streams_redacted():
        _send(plan_path, api_base, fmt, request_file)


def _send(plan_path: str, api_base: str | None, fmt: str, request_file: str) -> None:
    from capplan.executor.client import Client
    from capplan.executor.messages import load_request
    from capplan.executor.preflight import check_credentials

    client: Client | None = None
    try:
        client = Client.from_plan_file(plan_path, api_base=api_base)
        request = load_request(request_file)
        client.build(request)  # what the request makes the plan refuse is reported before any credential
        client.require_credentials()
        check_credentials([(client, api_base)])  # preflight: nothing is sent without every credential
        result = client.generate(request)
    except ResponseShapeError as exc:  # the answer came back and cannot be read: a failed call, exit 1
        exc.message = f"{type(exc).__name__}: {_one_line(exc.message)}"
        raise placed(exc, plan_path, request_file) from None
    except UserError as exc:
        raise placed(exc, plan_path, request_file) from None
    except Exception as exc:  # noqa: BLE001 - a failed call is one line, never a traceback
        # a provider's error body may echo the key or the URL it was sent: the CLI redacts every message
        from capplan.executor.loop_errors import configuration_problem
        from capplan.executor.preflight import configuration_advice

        # a refused configuration (401/403/404, missing credentials, a refused gateway key, a failure rule of the
        # binding or gateway, an answer that was no completion) says what to fix and what is wrong, on the same line
        problem = configuration_problem(exc, client.failure_rules) if client is not None else None
        advice = f"{configuration_advice(client, api_base)}; {problem}" if client is not None and problem else None
        raise ProviderCallFailed(f"{type(exc).__name__}: {_one_line(str(exc))}" + (f" ({advice})" if advice else ""),
                                 location=request_file) from None
    # the model's text too: an upstream that dumps the headers it got answers with the credentials
    data = redact_value(result.to_json())
    if fmt == "json":
        sys.stdout.write(canonical_bytes(data).decode("utf-8"))
    else:
        click.echo(redact_text(render_result(data)))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_result(data: dict[str, Any]) -> str:
    """The parts of a result a person reads first, one per line."""
    usage = data["usage"]
    lines = [f"text: {data['text']}"]
    for call in data["tool_calls"]:
        lines.append(f"tool_call {call['id']} {call['name']}: {json.dumps(call['arguments'], sort_keys=True, ensure_ascii=False)}")
    if data["reasoning"] is not None:
        blocks = data["reasoning"]["blocks"]
        signed = sum(1 for b in blocks if b.get("signature"))
        lines.append(f"reasoning: {len(blocks)} block(s), {signed} signed; summary: {data['reasoning']['summary']!r}")
    if usage.get("prompt_tokens") or usage.get("completion_tokens"):
        lines.append(
            "usage: "
            + ", ".join(f"{k}={'unknown' if v is None else v}" for k, v in sorted(usage.items())
                        if k != "provider_raw" and not isinstance(v, (dict, list)))
        )
    else:  # a prompt always has tokens: all zeros (or unknowns) is a response that reported none usable
        lines.append("usage: unknown (the provider reported no token counts)")
    cost = "unknown" if data["cost_usd"] is None else f"${data['cost_usd']:.6f}"
    lines.append(f"cost: {cost} ({data['cost_source']})")
    lines.append(f"finish_reason: {data['finish_reason']}")
    lines.append(f"latency_s: {data['latency_s']:.3f}")
    if data.get("gateway_route_kind"):
        route = f" -> {data['gateway_route']}" if data.get("gateway_route") else ""
        lines.append(f"gateway: {data['gateway_route_kind']}{route}")
    if data.get("key_index") is not None:
        lines.append(f"key_index: {data['key_index']}")
    if data.get("response_id"):
        lines.append(f"response_id: {data['response_id']}")
    if data["openrouter_generation_id"]:
        lines.append(f"openrouter_generation_id: {data['openrouter_generation_id']}")
    for err in data["parser_errors"]:
        lines.append(f"parser_error {err['tool_name']}: {err['reason']} (raw: {err['raw_arguments']!r})")
    for v in data["validation_errors"]:
        lines.append(f"schema_violation {v['tool_name']} at {v['path']}: {v['message']}")
    for s in data["value_substitutions"]:
        lines.append(f"value_substitution: {json.dumps(s, sort_keys=True, default=str)}")
    for problem in data.get("response_problems", ()):
        lines.append(f"response_problem: {problem}")
    return "\n".join(lines)
