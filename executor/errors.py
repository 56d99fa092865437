"""Typed executor errors.

Each one is a user error with a message that says what is wrong and where; the CLI turns any
of them into a one-line message and exit code 2. Errors raised by policies keep their own types
(``SchemaInvariantError``, ``RejectedValueError``, the reasoning routing ``ValueError``s); the
CLI recognises those too, so nothing here re-wraps them.
"""

from __future__ import annotations


class ExecutorError(Exception):
    """Base of every error the executor raises about its inputs."""


class RequestFileError(ExecutorError):
    """A request file is unreadable or does not match the request format.

    ``problems`` holds one located line per problem, so a file with several mistakes is
    reported in one pass.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(problems))


class MissingCredentialError(ExecutorError):
    """A credential the plan's binding pins into each call resolved empty."""


class PolicyConstructionError(ExecutorError):
    """A plan names a policy whose constructor refuses the plan's parameters."""


class PlanInconsistencyError(ExecutorError):
    """A loaded plan contradicts itself (e.g. its wire model is not its binding's rewrite)."""


class UnsupportedContentError(ExecutorError):
    """A conversation carries content the plan's content policy cannot put on the wire."""


class ResponseShapeError(ExecutorError):
    """A provider response cannot be interpreted without dropping data (e.g. unknown reasoning blocks)."""


class CredentialSpentError(RuntimeError):
    """A credential condition no wait clears: the rate-limit classifier stops its walk here."""


class AllApiKeysExhausted(CredentialSpentError):
    """Every key in the binding's rotation chain hit its own per-key limit.

    Terminal: the chain only ever advances, so no wait clears it. It chains the last per-key
    429 as its ``__cause__``; the rate-limit classifier stops at this type so the condition is
    never handed the probe controller's long 429 budget. The message names the env vars and the
    number of keys, never a key.
    """


class ApiTimeoutError(TimeoutError):
    """A call timed out on every attempt of the transport-timeout retry.

    Not retried by the outer controller: the timeout retry already spent its own budget, and
    multiplying it by the outer attempts would turn minutes into an hour.
    """


class GatewayRejectedError(CredentialSpentError):
    """A pinned gateway key was refused as over quota or unauthorised; rotation cannot help."""


def user_error(exc: BaseException) -> tuple[str, str] | None:
    """``(code, message)`` when ``exc`` is a mistake in the caller's input, else None.

    The CLI prints these as one line and exits 2; anything else is an internal error.
    """
    from capplan.executor.gateway.config import GatewayConfigError
    from capplan.executor.gateway.route import GatewayRouteAmbiguous
    from capplan.executor.plan import PlanLoadError
    from capplan.executor.policies.params_policy import ReasoningConfigError
    from capplan.executor.policies.reasoning_codec import ReasoningCodecError
    from capplan.executor.policies.schema_sanitizer import ToolSchemaError
    from capplan.executor.registry import RegistryError
    from capplan.executor.value_rules import RejectedValueError

    codes: list[tuple[type[BaseException], str]] = [
        (PlanLoadError, "PLAN"),
        (RegistryError, "PLAN"),
        (PlanInconsistencyError, "PLAN"),
        (PolicyConstructionError, "PLAN"),
        (RequestFileError, "REQUEST"),
        (ReasoningConfigError, "REASONING"),
        (ReasoningCodecError, "REASONING"),
        (RejectedValueError, "VALUE_RULE"),
        (ToolSchemaError, "TOOL_SCHEMA"),
        (MissingCredentialError, "CREDENTIAL"),
        (UnsupportedContentError, "CONTENT"),
        (GatewayConfigError, "GATEWAY"),
        (GatewayRouteAmbiguous, "GATEWAY"),
    ]
    for cls, code in codes:
        if isinstance(exc, cls):
            return code, str(exc)
    return None
