"""calls.jsonl's send and call lines assembled from their values (seam *journal lines*) are ``json.dumps``'s text.

The fast side writes the line from its values' JSON in sorted key order and takes the call record's
text as encoded where the call was made; the reference side sorts and encodes the line's dict. Every
line must be the same to the byte, whatever the values hold: text that JSON escapes, text beyond
ASCII, floats of every spelling, ids a hostile task could choose (safe names only reach a key).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from tests.mode_switch import mode
from capplan.trials.run_folder.journal_lines import call_line, call_text, send_line

TEXTS = ["", "agent", "gpt-5", "résumé", "日本語", 'quote " and back\\slash', "tab\tnew\nline", "\x00\x1f\x7f",
         "\u2028\u2029", "emoji \U0001f600", "a" * 300]
FLOATS = [0.0, -0.0, 1.0, 0.1, 1e-05, 7.5e-05, 1e16, 1.5e300, 5e-324, 1796491787.285, 123456789.0,
          float("inf"), float("-inf"), float("nan")]


def both(build: Callable[..., str], *args: Any, **kwargs: Any) -> tuple[str, str]:
    """``build(*args, **kwargs)`` in the fast mode and in the reference mode."""
    with mode(False):
        fast = build(*args, **kwargs)
    with mode(True):
        reference = build(*args, **kwargs)
    return fast, reference


def call_record(rng: random.Random) -> dict[str, object]:
    return {"role": rng.choice(TEXTS), "turn": rng.randrange(0, 10**6), "cost_usd": rng.choice([None, *FLOATS[:10]]),
            "status": "ok", "response_problems": [rng.choice(TEXTS)], "usage": {"prompt_tokens": rng.randrange(10**9)},
            "nested": {"b": [1, 2.5, None, True], "a": rng.choice(TEXTS)}}


def test_lines_are_json_dumps_text_on_varied_values() -> None:
    rng = random.Random(20261205)
    for _ in range(400):
        key = f"{rng.choice(['gpt-5', 'm', 'plan.v2'])}/{rng.choice(['count', 't_1', 'x-y'])}/{rng.randrange(10**6)}"
        run_id = rng.choice([None, "488822148cc64111935ac66babdbbcc4", rng.choice(TEXTS)])
        execution, at = rng.choice(TEXTS + ["67f9177a52b44f49a8304c4699cc4442"]), rng.choice(FLOATS)
        attempt, request_id = rng.randrange(1, 10**4), rng.choice([None, *TEXTS])
        record = call_record(rng)
        fast, reference = both(call_line, run_id, execution, key, attempt, at, call_text(record), request_id)
        assert fast == reference
        assert json.loads(fast)["call"] == json.loads(json.dumps(record))
        worst, sent = rng.choice([None, *FLOATS]), rng.choice(TEXTS)
        role, turn, send_attempt = rng.choice(TEXTS), rng.randrange(100), rng.randrange(1, 5)
        fast, reference = both(send_line, run_id, execution, key, attempt, at, sent, role, turn, send_attempt,
                                 worst)
        assert fast == reference
        assert json.loads(fast)["send"]["role"] == role
    for request_id in TEXTS:
        for worst in [None, *FLOATS]:
            fast, reference = both(send_line, "r", "e", "p/t/3", 2, 1.5, request_id, "agent", 4, 1, worst)
            assert fast == reference


@pytest.mark.parametrize("odd", [
    {"attempt": True}, {"attempt": 2.0}, {"at": 17}, {"run_id": 5}, {"request_id": 7}, {"execution": b"e"},
])
def test_a_value_of_an_unexpected_type_is_written_as_json_writes_it(odd: dict[str, object]) -> None:
    values: dict[str, object] = {"run_id": "r", "execution": "e", "key": "p/t/0", "attempt": 1, "at": 1.25,
                                 "request_id": "q", **odd}
    if isinstance(values["execution"], bytes):
        with pytest.raises(TypeError):  # as json.dumps refuses it
            call_line(**values, call="{}")  # type: ignore[arg-type]
        return
    fast, reference = both(call_line, **values, call="{}")
    assert fast == reference
    send = {k: v for k, v in values.items()}
    fast, reference = both(send_line, **send, role="agent", turn=0, send_attempt=1, max_usd=None)
    assert fast == reference
