"""Typed executor errors.

Each user-facing one is a :class:`~capplan.core.errors.UserError` whose class names its code;
the CLI renders any of them as located lines and ends with the error's exit code. Errors raised
by policies derive from these bases too (``ReasoningError``, ``PolicyParamsError``, …), so a
caller never needs a list of which exception means what. This module imports only the core.
"""

from __future__ import annotations

from capplan.core.errors import ExitCode, UserError


class ExecutorError(UserError):
    """Base of every error the executor raises about its inputs."""

    code = "EXECUTOR"


class PlanError(ExecutorError):
    """A plan that cannot be used as it is (unreadable, tampered, inconsistent, refused by a policy)."""

    code = "PLAN"


class ReasoningError(ExecutorError, ValueError):
    """Reasoning settings or blocks the plan's reasoning route cannot carry."""

    code = "REASONING"


class GatewayError(ExecutorError):
    """The LLM gateway settings, or a route through the gateway, cannot be used."""

    code = "GATEWAY"


class PolicyParamsError(ExecutorError, ValueError):
    """A policy refuses the parameters a plan gives it; the message names each parameter."""

    code = "POLICY_PARAMS"


class RequestFileError(ExecutorError):
    """A request file is unreadable or does not match the request format.

    ``problems`` holds one located line per problem, so a file with several mistakes is
    reported in one pass.
    """

    code = "REQUEST"

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(problems))

    def render(self) -> str:
        """The problems, each already located to its line and column by the request reader."""
        return "\n".join(self.problems)


class MissingCredentialError(ExecutorError):
    """A credential the plan's binding pins into each call resolved empty."""

    code = "CREDENTIAL"


class PolicyConstructionError(PlanError):
    """A plan names a policy whose constructor refuses the plan's parameters."""


class PlanInconsistencyError(PlanError):
    """A loaded plan contradicts itself (e.g. its wire model is not its binding's rewrite)."""


class UnsupportedContentError(ExecutorError):
    """A conversation carries content the plan's content policy cannot put on the wire."""

    code = "CONTENT"


class ResponseShapeError(ExecutorError):
    """A provider response cannot be interpreted without dropping data (e.g. unknown reasoning blocks).

    Not the caller's input: the call was made and its answer is unusable, so the command fails (1).
    """

    code = "RESPONSE"
    exit_code = ExitCode.FINDINGS


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


class CredentialsMissingError(ExecutorError):
    """Preflight: a credential some plan of the command needs is not set; nothing was sent.

    ``problems`` holds one message per missing variable (or set of alternatives), each naming the
    plans that need it and never a value; every one is rendered as its own located line.
    """

    code = "CREDENTIALS"

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(problems))

    def render(self) -> str:
        """One ``location: error[CREDENTIALS]: …`` line per missing variable."""
        where = self.location or "capplan"
        return "\n".join(f"{where}: error[{self.code}]: {problem}" for problem in self.problems)



class ProviderHTTPError(RuntimeError):
    """A provider answered a direct-transport call with a non-2xx status (or a body that is not a response).

    ``status_code`` is the status off the wire, which is what the retry controllers, the 429
    classifier and the loop's error classes read; ``response`` keeps the HTTP response (its
    headers carry ``Retry-After``). The message quotes the provider's error text, which the client
    scrubs of credentials before anyone sees it.
    """

    def __init__(self, message: str, *, status_code: int, response: object = None, body: object = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.response = response
        self.body = body


class ProviderProtocolError(ProviderHTTPError):
    """A 2xx answer that is no chat completion at all (an HTML page, JSON without ``choices``).

    A protocol fact, not a text guess: an OpenAI-compatible provider answers a success with a
    completion, so something else answered (a captive portal, a login page, a wrong base URL).
    Infrastructure, never retried and never graded: ``problem`` says what arrived.
    """

    def __init__(self, message: str, *, status_code: int, problem: str, response: object = None) -> None:
        super().__init__(message, status_code=status_code, response=response)
        self.problem = problem


class ProviderRateLimitError(ProviderHTTPError):
    """HTTP 429 from the provider."""


class ContextWindowExceededError(ProviderHTTPError):
    """The provider refused the request because the prompt does not fit the model's context window."""


class ProviderConnectionError(ConnectionError):
    """The connection to the provider failed or dropped before a complete response arrived."""


class ProviderTimeoutError(TimeoutError):
    """One attempt of a direct-transport call exceeded the plan's per-attempt timeout."""


class ProviderRequestTimeout(ProviderTimeoutError):
    """HTTP 408 from the provider: a timeout like one of our own (retried by the timeout retry, as litellm's ``Timeout``)."""

    def __init__(self, message: str, *, status_code: int, response: object = None, body: object = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.response = response
        self.body = body


class ProviderResponseError(RuntimeError):
    """A direct-transport answer broke a limit of the plan's binding (its body too large on the wire or decoded).

    The provider misbehaving, not a transient condition: never retried (it carries no ``status_code``
    for the retry controllers to read; ``http_status`` is the answer's). The message names the limit
    and how to raise it.
    """

    def __init__(self, message: str, *, http_status: int, limit_field: str, limit: int) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.limit_field = limit_field
        self.limit = limit
