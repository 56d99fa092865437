"""Pydantic models of every input format: preset file, overlay, providers, pricing, run config.

All are ``extra="forbid"`` and frozen; their JSON Schemas are generated into ``schemas/``.
"""
