"""The direct transport: capplan's own HTTP client for OpenAI-compatible chat routes.

The request builder's kwargs become one ``POST {base}/chat/completions`` (:mod:`.request`) sent
on kept-alive connections pooled per process and origin (:mod:`.pool`); the answer is read into the response
shape the executor's parser reads, or raised as a typed error (:mod:`.response`). Everything the
request needs beyond the kwargs was decided at compile time (the plan's ``wire`` record), so no
provider mapping happens per call. :class:`.sender.DirectCompletion` is the callable the client
calls per attempt, in the place of ``litellm.completion``.
"""
