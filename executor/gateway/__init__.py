"""Routing calls through an OpenAI-compatible LLM gateway (a LiteLLM proxy is the reference).

``config`` reads the seven ``LLM_PROXY_*`` variables, ``secret_refs`` expands ``${secret:NAME}``
in header values, ``catalog`` reads ``GET {base}/models`` once per base URL, ``route`` decides
which name (if any) a model answers to there, and ``transport`` applies that decision to each
call's kwargs.
"""
