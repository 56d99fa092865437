"""No credential value (or the slices providers echo back) ever reaches a file or the terminal."""

from __future__ import annotations

import json
from pathlib import Path

from .fakes.chat import ChatProvider
from .fakes.gemini import GeminiProvider
from .fakes.portal import PortalProvider
from .helpers import FAKE_KEY, custom_run, prices_file

OLD_KEY = "nous-agent-key-OLD-aaaaaaaaaaaaaaaaaaaa"
NEW_KEY = "nous-agent-key-NEW-bbbbbbbbbbbbbbbbbbbb"
GEMINI_KEY = "AIzaFAKEgeminikey-cccccccccccccccccccc"


def forms(key: str) -> list[str]:
    return [key, key[:12], key[-12:]]


def assert_clean(folder: Path, printed: str, keys: list[str]) -> None:
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    for path in files:
        text = path.read_text(errors="replace")
        for key in keys:
            for form in forms(key):
                assert form not in text, f"{form!r} leaked into {path.name}"
    for key in keys:
        for form in forms(key):
            assert form not in printed, f"{form!r} printed"


def test_keys_echoed_by_a_provider_are_redacted_everywhere(serve, harness, tmp_path, monkeypatch):
    # the server expects another key and answers 401 quoting the one it got, as OpenAI does
    server = serve(ChatProvider(key="sk-the-right-one-0000000000000000"))
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    out = tmp_path / "out"
    printed = []
    for argv in (custom_run(server.base, out, prices_file(tmp_path)), ["report", "--out", out, "--overlay"]):
        done = harness(*[a for a in argv if a != "--quiet"])
        printed.append(done.out + done.err)
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert any(c.get("status") == 401 and "<redacted>" in c["error"] for c in calls)
    assert_clean(out, "".join(printed), [FAKE_KEY])


def test_dotenv_portal_and_gemini_keys_never_written(serve, harness, tmp_path, home):
    (home / ".hermes" / ".env").write_text(f"GEMINI_API_KEY={GEMINI_KEY}\n")
    auth = home / ".hermes" / "auth.json"
    auth.write_text(json.dumps({"providers": {"nous": {"agent_key": OLD_KEY}}}))
    portal = serve(PortalProvider(auth_file=auth, old_key=OLD_KEY, new_key=NEW_KEY))
    gemini = serve(GeminiProvider(key=GEMINI_KEY))
    out = tmp_path / "out"
    printed = ""
    for argv in (
            ["run", "--route", "nous", "--base-url", portal.base, "--models", "x-ai/grok-4.7",
             "--out", out, "--rps", "0", "--want-direct", "x-ai/grok-4.7"],
            ["run", "--route", "gemini-native", "--base-url", gemini.base, "--models", "gemini-3.5-flash",
             "--out", out, "--rps", "0", "--prices", prices_file(tmp_path)],
            ["models", "--route", "nous", "--base-url", portal.base],
            ["report", "--out", out, "--overlay"]):
        done = harness(*argv)
        assert done.code == 0, done.err
        printed += done.out + done.err
    assert all(r.headers.get("x-goog-api-key") == GEMINI_KEY for r in gemini.posts())
    assert_clean(out, printed, [OLD_KEY, NEW_KEY, GEMINI_KEY, "unused-access-token-value"])
