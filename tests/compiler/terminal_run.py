"""Run a command with its stderr on a pseudo-terminal, as a user at a shell sees it."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import tempfile
from pathlib import Path

#: bound on waiting for the command (never asserted on: a slow machine only waits longer)
WAIT_S = 180.0


def run_on_terminal(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(exit status, stdout, what the terminal showed on stderr) of ``cmd``."""
    master, slave = pty.openpty()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=slave)
        os.close(slave)
        shown = bytearray()
        try:
            while True:
                ready, _, _ = select.select([master], [], [], WAIT_S)
                if not ready:
                    proc.kill()
                    raise AssertionError(f"{cmd} wrote nothing for {WAIT_S} s")
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed its side
                    break
                if not chunk:
                    break
                shown += chunk
        finally:
            os.close(master)
            code = proc.wait(timeout=WAIT_S)
        out.seek(0)
        stdout = out.read().decode()
    return code, stdout, shown.decode(errors="replace").replace("\r\n", "\n")
