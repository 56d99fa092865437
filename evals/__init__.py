"""Evaluation harnesses that run beside capplan but depend on neither compiler nor executor."""
