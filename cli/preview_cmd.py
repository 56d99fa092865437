"""``capplan preview``: the exact kwargs a plan builds for a request file (a Responses plan's: the Responses request)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from capplan.cli.common import request_options

from capplan.core.canonical import canonical_bytes
from capplan.core.errors import UserError
from capplan.core.redaction import redact_text, standard_streams_redacted


@click.command("preview")
@request_options
@click.option(
    "--format", "fmt", type=click.Choice(["json", "text"]), default="json", show_default=True,
    help="json: canonical JSON of the kwargs; text: a readable summary.",
)
def preview_cmd(plan_path: str, api_base: str | None, fmt: str, request_file: str) -> None:
    """Print the kwargs the plan builds for REQUEST_FILE, credentials redacted.

    On a chat plan these are litellm.completion's kwargs (messages, tools); on a Responses plan
    (openai-responses, xai-responses) the Responses request both transports send: instructions,
    input items (messages, function_call, function_call_output, replayed reasoning items) and
    function tools. --format text lists each message, or each input item, on a line of its own.

    Redacted: the API key, every credential value in play (rotation keys, the gateway key, every
    LLM_PROXY_HEADERS value), secret-looking headers, URL userinfo (https://user:pass@host) and
    key-like query parameters (api_key=, key=, token=, access_token=, apikey=).

    Nothing is sent. The request file format is documented in the README and in
    schemas/request.schema.json.

    \b
      capplan compile --out plans/
      capplan preview --plan plans/claude-opus-4.7.json golden/conversations/signed_thinking_replay.json

    Exit codes: 0 ok, 2 input error (plan, request, settings the plan refuses).
    """
    with standard_streams_redacted():
        _preview(plan_path, api_base, fmt, request_file)


def _preview(plan_path: str, api_base: str | None, fmt: str, request_file: str) -> None:
    from capplan.executor.client import Client
    from capplan.executor.messages import load_request
    from capplan.executor.preflight import missing_credentials_problems

    try:
        client = Client.from_plan_file(plan_path, api_base=api_base)
        built = client.build(load_request(request_file))
        kwargs = client.redacted(built.kwargs)
    except UserError as exc:
        raise placed(exc, plan_path, request_file) from None
    # the same preflight as send, as a note: a preview sends nothing, so it works without keys, and
    # says what sending this request would stop at
    for problem in missing_credentials_problems([(client, api_base)]):
        click.echo(redact_text(f"{request_file}: note: send would stop before sending: {problem}"), err=True)
    # stderr, so the JSON on stdout stays exactly the kwargs
    for record in built.reasoning_left_out:
        click.echo(redact_text(f"{request_file}: note: {record.where} ({record.type}) not replayed: {record.reason}"),
                   err=True)
    if fmt == "json":
        sys.stdout.write(canonical_bytes(kwargs).decode("utf-8"))
    else:
        route = client.route
        if route is not None:
            shown = f" -> {route.route}" if route.route else ""
            click.echo(redact_text(f"gateway: {route.kind}{shown} ({route.reason})"))
        click.echo(render_text(kwargs))


def placed(exc: UserError, plan_path: str, request_file: str) -> UserError:
    """``exc`` located at the file it is about when it names no place of its own.

    A plan error is about the plan file; a gateway setting is about no file (it is placed at the
    program); anything else the request made the plan refuse is about the request file.
    """
    from capplan.executor.errors import CredentialsMissingError, GatewayError, PlanError

    if isinstance(exc, CredentialsMissingError):
        return exc  # about the environment, not a file: placed at the command that checked it
    if exc.location is None:
        exc.location = ("capplan" if isinstance(exc, GatewayError) else
                        plan_path if isinstance(exc, PlanError) else request_file)
    return exc


def render_text(kwargs: dict[str, Any]) -> str:
    """A readable summary: transport, settings, tools, then each message (or each Responses input item)."""
    # a Responses plan's kwargs are the Responses request: `input` items and `instructions`, no `messages`
    responses = "messages" not in kwargs and "input" in kwargs
    shown_apart = ("model", "input", "instructions", "tools") if responses else ("model", "messages", "tools")
    lines = [f"model: {kwargs['model']}"]
    for key in sorted(k for k in kwargs if k not in shown_apart):
        lines.append(f"{key}: {json.dumps(kwargs[key], sort_keys=True, ensure_ascii=False)}")
    tools = kwargs.get("tools") or []
    lines.append(f"tools ({len(tools)}): {', '.join(_tool_name(t) for t in tools)}")
    if not responses:
        for i, msg in enumerate(kwargs["messages"]):
            extra = sorted(k for k in msg if k not in ("role", "content"))
            suffix = f"  [{', '.join(extra)}]" if extra else ""
            lines.append(f"[{i}] {msg['role']}: {_clipped(msg.get('content'))}{suffix}")
        return "\n".join(lines)
    if kwargs.get("instructions") is not None:
        lines.append(f"instructions: {_clipped(kwargs['instructions'])}")
    items = kwargs["input"]
    if isinstance(items, str):  # the Responses API also takes one user text as the whole input
        items = [{"type": "message", "role": "user", "content": items}]
    lines += [f"[{i}] {_input_item(item)}" for i, item in enumerate(items)]
    return "\n".join(lines)


def _tool_name(tool: dict[str, Any]) -> str:
    # a chat tool nests its name under `function`; a Responses function tool carries it at the top
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return str(name) if name is not None else "?"


def _input_item(item: Any) -> str:
    """One Responses input item on one line: its type, what pairs it, and its text."""
    if not isinstance(item, dict):
        return f"{type(item).__name__}: {_clipped(item)}"
    kind = item.get("type", "message")
    if kind == "message":
        head = f"{item.get('role')}: {_clipped(item.get('content'))}"
    elif kind == "function_call":
        head = f"function_call {item.get('call_id')} {item.get('name')}: {_clipped(item.get('arguments'))}"
    elif kind == "function_call_output":
        head = f"function_call_output {item.get('call_id')}: {_clipped(item.get('output'))}"
    elif kind == "reasoning":
        # the encrypted payload is opaque and long: its size says it travels, the text is the summary
        encrypted = item.get("encrypted_content")
        carried = f"encrypted_content {len(encrypted)} chars" if isinstance(encrypted, str) else "no encrypted_content"
        summary = [part.get("text", "") for part in item.get("summary") or () if isinstance(part, dict)]
        head = f"reasoning {item.get('id')} ({carried}); summary: {_clipped(' '.join(summary))}"
    else:
        head = f"{kind}: {_clipped(item)}"
    extra = sorted(k for k in item if k in ("id", "status") and kind not in ("reasoning",))
    return head + (f"  [{', '.join(f'{k}={item[k]}' for k in extra)}]" if extra else "")


def _clipped(content: Any) -> str | None:
    shown = content if isinstance(content, str) or content is None else json.dumps(content, ensure_ascii=False)
    if shown is not None and len(shown) > 200:
        shown = shown[:200] + "…"
    return shown
