"""The output folder and its append-only JSONL logs."""
