"""``capplan preview``: the exact litellm kwargs a plan builds for a request file."""

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
    """Print the kwargs litellm.completion would receive for REQUEST_FILE, credentials redacted.

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
    """A readable summary: transport, settings, tools, then each message."""
    lines = [f"model: {kwargs['model']}"]
    for key in sorted(k for k in kwargs if k not in ("model", "messages", "tools")):
        lines.append(f"{key}: {json.dumps(kwargs[key], sort_keys=True, ensure_ascii=False)}")
    tools = kwargs.get("tools") or []
    lines.append(f"tools ({len(tools)}): {', '.join(t.get('function', {}).get('name', '?') for t in tools)}")
    for i, msg in enumerate(kwargs["messages"]):
        extra = sorted(k for k in msg if k not in ("role", "content"))
        content = msg.get("content")
        shown = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        if shown is not None and len(shown) > 200:
            shown = shown[:200] + "…"
        suffix = f"  [{', '.join(extra)}]" if extra else ""
        lines.append(f"[{i}] {msg['role']}: {shown}{suffix}")
    return "\n".join(lines)
