"""``Client``: a loaded plan, its policies, and one provider call per ``generate``.

The client only wires the parts together: the request builder shapes the call, the retry
controller repeats transient failures, the response parser interprets the answer. litellm is
imported on the first real send, never at import time (it takes seconds to import).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from executor import mock_provider
from executor.messages import ChatRequest
from executor.plan import Plan
from executor.policy_set import PolicySet
from executor.request_builder import BuiltRequest, RequestBuilder
from executor.response_parser import ResponseParser
from executor.result import GenerationResult
from executor.loop_errors import LoopErrorDecision, classify_loop_error
from executor.rate_limit import compile_patterns
from executor.retrying import default_retrying
from executor.transport import redact

Completion = Callable[..., Any]


class Client:
    """Builds, sends and parses requests for one plan; one instance serves concurrent callers."""

    def __init__(
        self,
        plan: Plan,
        *,
        completion: Completion | None = None,
        sleep: Callable[[float], None] = time.sleep,
        env: Mapping[str, str] | None = None,
        api_base: str | None = None,
    ) -> None:
        """``completion`` replaces ``litellm.completion`` (benchmarks, tests); ``env`` replaces
        ``os.environ`` for credentials and endpoint overrides; ``api_base`` overrides the binding's."""
        self.plan = plan
        self.policies = PolicySet.from_plan(plan)
        self.builder = RequestBuilder(plan, self.policies)
        self.parser = ResponseParser(plan, self.policies)
        self.mock = mock_provider.is_mock(plan.model.provider)
        self._completion = completion
        self._sleep = sleep
        self._env = env
        self._api_base = api_base
        self._rate_limit_patterns = compile_patterns(plan.binding.binding.rate_limit_patterns)

    @classmethod
    def from_plan_file(cls, path: str | Path, **kwargs: Any) -> Client:
        """Load and verify a plan file, then build a client for it."""
        return cls(Plan.load(path), **kwargs)

    def classify_loop_error(self, exc: BaseException) -> LoopErrorDecision:
        """How a trial-loop turn that raised ``exc`` ends, judged with this plan's rate-limit patterns.

        The seam a trial loop takes as ``classify_error=client.classify_loop_error``; see
        :mod:`executor.loop_errors` for the contract.
        """
        return classify_loop_error(exc, self._rate_limit_patterns)

    def build(self, request: ChatRequest | Mapping[str, Any]) -> BuiltRequest:
        """The request as litellm will receive it, plus what parsing the response needs."""
        return self.builder.build(_as_request(request), env=self._env, api_base=self._api_base)

    def build_request(self, request: ChatRequest | Mapping[str, Any]) -> dict[str, Any]:
        """The exact kwargs for ``litellm.completion``, credentials included."""
        return self.build(request).kwargs

    def preview(self, request: ChatRequest | Mapping[str, Any]) -> dict[str, Any]:
        """The kwargs with credentials redacted, safe to print."""
        return redact(self.build_request(request))

    def generate(self, request: ChatRequest | Mapping[str, Any]) -> GenerationResult:
        """Send one request (retrying transient failures) and parse the response."""
        built = self.build(request)
        if self.mock:
            started = time.monotonic()
            response = mock_provider.complete(built.kwargs)
            return self.parser.parse(response, built, latency_s=time.monotonic() - started, synthetic=True)
        completion = self._completion or _litellm_completion()
        latency = 0.0
        for attempt in default_retrying(self._sleep):
            with attempt:
                started = time.monotonic()
                response = completion(**built.kwargs)
                latency = time.monotonic() - started
        return self.parser.parse(response, built, latency_s=latency)


def _as_request(request: ChatRequest | Mapping[str, Any]) -> ChatRequest:
    if isinstance(request, ChatRequest):
        return request
    return ChatRequest.model_validate(request)


def _litellm_completion() -> Completion:
    # Without this litellm first tries to download its model cost map on import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    completion: Completion = litellm.completion
    return completion
