"""A trial's long record YAML rendered on a helper process, off the GIL the running trials share.

Turning a finished trial's records into ``trajectory.yaml`` and ``metrics.yaml`` is pure Python
work. A six-turn trial of plain data takes about 0.1 ms written straight (:mod:`.record_emitter`),
less than sending it to a helper and back, so :class:`RecordRenderer` writes such documents in this
process: with the helper taking every trial, ``benchmarks/trial_loop.py``'s 8 ms row spent about 3%
more CPU per turn (both ways alternated in one process). Long text costs about 1.3 ms per 110 KiB,
and a value of another type goes through PyYAML's nodes (about 2 ms for that same trial); in a local
run every trial thread shares one GIL with the run-folder writers, so that rendering slows the
trials down exactly when the run is busiest. A document with more than :data:`HERE_MAX_TEXT`
characters of text, or one the straight writer declines, is sent (pickled: a few microseconds) to
one helper process, ``python -m capplan.trials.run_folder.render_process``, started for the first
such document, which renders it with :func:`capplan.trials.run_folder.record_yaml.dump_records_yaml`
on another core and sends the bytes back (seam *render helper*; the reference mode renders
everything here). The files are the same bytes either way (``tests/trials/test_render_process.py``).

What can go through the helper is plain data only: its unpickler refuses every global (a class,
a function, an enum), so nothing a task file names is ever imported there; a document holding
such a value is rendered in this process instead, exactly as without the helper. The helper is
an optimisation and never a new way to fail: when it cannot be started, is not ready yet, dies,
answers late or answers garbage, the records are rendered here (and after a failure the helper
is not used again in this run; :attr:`RecordRenderer.gave_up` says why). It ignores Ctrl-C (the
run decides when to stop) and exits when its input closes, so it never outlives the run. A run
never waits for the helper to start; :meth:`RecordRenderer.wait_ready` (tests, benchmarks) starts
it if no document has, and waits for it for a bounded time, so that what they measure does not
depend on how loaded the machine is.

Protocol, both ways over the helper's stdin/stdout: the helper writes ``R`` once it is ready;
a request is an 8-byte big-endian length and a pickled list of documents; a reply is a status
byte (0: rendered, 1: refused) and an 8-byte length, then for status 0 each document's YAML as
an 8-byte length and its bytes, for status 1 a UTF-8 reason.
"""

from __future__ import annotations

import io
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from capplan.core.reference_mode import reference_mode
from capplan.trials.run_folder.record_emitter import emit_records_yaml
from capplan.trials.run_folder.record_yaml import dump_records_yaml

#: Runs with fewer trials to write render them in-process: the helper's start (~60 ms of CPU on
#: another core) would cost more than the rendering it takes over.
MIN_TRIALS = 16
#: A document with at most this many characters of text (and plain data only) is written in this
#: process: straight, ordinary text costs about 10 us per KiB here, less than sending it to the helper
#: and back up to about this bound; text built to make the writer work per character (emoji, runs of
#: spaces, control characters) costs up to about 0.27 ms per KiB, so this also bounds what a hostile
#: provider's answer costs the run's own process (about 4 ms). Longer documents go to the helper.
HERE_MAX_TEXT = 16 << 10
#: How long one exchange may take before the helper is given up on, plus a second per this many
#: bytes of request (a huge trajectory takes the helper as long as it would take this process).
EXCHANGE_TIMEOUT_S = 30.0
_BYTES_PER_EXTRA_SECOND = 200_000
#: How long closing waits for the helper to exit before it is killed.
CLOSE_TIMEOUT_S = 5.0

#: what the helper's interpreter is started with (tests start stand-ins that misbehave)
HELPER_ARGS: tuple[str, ...] = ("-m", "capplan.trials.run_folder.render_process")
#: the variables the helper inherits besides PYTHON*: it renders data and needs no credentials
_KEPT_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT")

_READY = b"R"
_RENDERED, _REFUSED = 0, 1
_LENGTH = 8


class _HelperFailed(Exception):
    """The helper did not answer as the protocol says (the message says how)."""


class RecordRenderer:
    """Renders lists of record documents to YAML bytes, on the helper process when it can.

    Thread-safe: the run folder's writer threads share one renderer; exchanges with the helper
    take turns (the helper renders a trial in about the time a writer takes to write its files).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._started = False
        self._closed = False
        self._ready = False
        #: why the helper is not used (any more); None while it is, or may be once ready
        self.gave_up: str | None = None
        #: documents rendered by the helper / in this process (tests and benchmarks read them)
        self.rendered_by_helper = 0
        self.rendered_here = 0
        if reference_mode():  # seam "render helper": rendered in this process, the plain way
            self.gave_up = "the reference mode renders in this process (CAPPLAN_REFERENCE=1)"

    def render(self, documents: Sequence[Any]) -> list[bytes]:
        """Each document's YAML (:func:`dump_records_yaml`); raises only what that raises.

        A document of plain data with at most :data:`HERE_MAX_TEXT` characters of text is written
        here (:func:`emit_records_yaml`: cheaper than the exchange); the others go to the helper,
        which is started for the first of them.
        """
        parts: list[bytes | None] = [None] * len(documents)
        if self.gave_up is None and HERE_MAX_TEXT >= 0:  # the reference mode has given up: PyYAML's bytes
            for index, document in enumerate(documents):
                direct = emit_records_yaml(document, HERE_MAX_TEXT)
                if direct is not None:
                    parts[index] = direct.encode("utf-8")
        left = [index for index, part in enumerate(parts) if part is None]
        here = len(documents) - len(left)
        if left:
            rendered = self._by_helper([documents[index] for index in left])
            if rendered is None:
                rendered = [dump_records_yaml(documents[index]) for index in left]
                here += len(left)
            for index, part in zip(left, rendered):
                parts[index] = part
        with self._lock:
            self.rendered_here += here
        return [part for part in parts if part is not None]

    def _by_helper(self, documents: Sequence[Any]) -> list[bytes] | None:
        """The helper's rendering, or None when this process should render them."""
        with self._lock:
            process = self._started_process()
            if process is None:
                return None
            assert process.stdin is not None and process.stdout is not None
            try:
                if not self._take_ready(process.stdout, 0.0):
                    return None  # still starting: not worth waiting for
                try:
                    request = pickle.dumps(list(documents), protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # noqa: BLE001 - not picklable: rendered here, as without the helper
                    return None
                deadline = time.monotonic() + EXCHANGE_TIMEOUT_S + len(request) / _BYTES_PER_EXTRA_SECOND
                _write_all(process.stdin, len(request).to_bytes(_LENGTH, "big") + request, deadline)
                status = _read_exact(process.stdout, 1, deadline)[0]
                # a garbled length costs no memory: only bytes that arrive are kept, until the deadline
                size = int.from_bytes(_read_exact(process.stdout, _LENGTH, deadline), "big")
                body = _read_exact(process.stdout, size, deadline)
                if status == _REFUSED:
                    return None  # a value it may not unpickle, or one YAML refuses: here it renders or raises
                if status != _RENDERED:
                    raise _HelperFailed(f"it answered with status {status}")
                parts = _split(body, len(documents))
            except (OSError, ValueError, _HelperFailed) as exc:
                self._give_up(f"the helper process failed: {exc}")
                return None
            self.rendered_by_helper += len(parts)
            return parts

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the helper to say it is ready; whether it may be used now.

        Never called by a run (which renders in-process while the helper starts): a seam for tests
        and benchmarks that must know the helper takes the next request, whatever the machine's load.
        """
        with self._lock:
            process = self._started_process()
            if process is None:
                return False
            assert process.stdout is not None
            try:
                return self._take_ready(process.stdout, timeout_s)
            except (OSError, ValueError, _HelperFailed) as exc:
                self._give_up(f"the helper process failed: {exc}")
                return False

    def _started_process(self) -> subprocess.Popen[bytes] | None:
        """The helper, started on the first call (under the lock); None once given up on or closed."""
        if not self._started and not self._closed and self.gave_up is None:
            self._started = True
            self._start()
        return self._process if self.gave_up is None and not self._closed else None

    def _start(self) -> None:
        try:
            self._process = subprocess.Popen(
                [sys.executable, *HELPER_ARGS], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_helper_environment(), close_fds=True)
        except OSError as exc:
            self.gave_up = f"the helper process could not be started: {exc.strerror or exc}"
            return
        assert self._process.stdin is not None
        try:
            os.set_blocking(self._process.stdin.fileno(), False)  # writes wait in select, with a deadline
        except (AttributeError, OSError) as exc:  # a platform whose pipes cannot be made non-blocking
            self._give_up(f"the helper's input could not be made non-blocking: {exc}")

    def _take_ready(self, stdout: IO[bytes], timeout_s: float) -> bool:
        """Whether the helper has said it is ready, reading its ``R`` if it is waiting within ``timeout_s``."""
        if self._ready:
            return True
        if not _readable(stdout, timeout_s):
            return False
        if _read_exact(stdout, 1, time.monotonic() + EXCHANGE_TIMEOUT_S) != _READY:
            raise _HelperFailed("it did not say it was ready")
        self._ready = True
        return True

    def _give_up(self, why: str) -> None:
        self.gave_up = why
        self._stop(kill=True)

    def close(self) -> None:
        """Stop the helper (it exits once its input closes); bounded, never raises. It is not started again."""
        with self._lock:
            self._closed = True
            self._stop(kill=False)

    def _stop(self, *, kill: bool) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if kill:
                process.kill()
            elif process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=CLOSE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            try:
                process.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass  # unkillable (a stopped zombie parent): nothing more this process can do
        finally:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass


def _helper_environment() -> dict[str, str]:
    """What the helper needs of this environment, with capplan's own folder first on its import path.

    Nothing else is passed on (API keys least of all). capplan may have been imported from a
    checkout put on ``sys.path`` by hand (a benchmark, a notebook), which a new interpreter
    would not see, so the folder holding the imported ``capplan`` package leads ``PYTHONPATH``.
    """
    import capplan

    env = {name: value for name, value in os.environ.items()
           if (name.startswith("PYTHON") and name != "PYTHONPATH") or name in _KEPT_VARIABLES}
    package_parent = str(Path(capplan.__file__).resolve().parent.parent)
    paths = [package_parent, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def _readable(stream: IO[bytes], timeout_s: float) -> bool:
    ready, _, _ = select.select([stream], [], [], max(0.0, timeout_s))
    return bool(ready)


def _read_exact(stream: IO[bytes], size: int, deadline: float) -> bytes:
    """``size`` bytes of ``stream`` (an unbuffered pipe), by ``deadline``."""
    chunks: list[bytes] = []
    missing = size
    fd = stream.fileno()
    while missing:
        if not _readable(stream, deadline - time.monotonic()):
            raise _HelperFailed("it did not answer in time")
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            raise _HelperFailed("it exited")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _write_all(stream: IO[bytes], data: bytes, deadline: float) -> None:
    """All of ``data`` into ``stream`` (a pipe made non-blocking at start), by ``deadline``."""
    fd = stream.fileno()
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
            continue
        except BlockingIOError:  # the pipe is full: the helper is still reading the previous part
            pass
        _, ready, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise _HelperFailed("it did not take the request in time")


def _split(body: bytes, count: int) -> list[bytes]:
    parts: list[bytes] = []
    at = 0
    for _ in range(count):
        if at + _LENGTH > len(body):
            raise _HelperFailed("its answer was cut short")
        size = int.from_bytes(body[at: at + _LENGTH], "big")
        at += _LENGTH
        if at + size > len(body):
            raise _HelperFailed("its answer was cut short")
        parts.append(body[at: at + size])
        at += size
    if at != len(body):
        raise _HelperFailed("its answer was longer than the request asked for")
    return parts


# -- the helper's side ---------------------------------------------------------------------


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain data only: no class, function or other global is ever looked up."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"only plain data is rendered here ({module}.{name} is not)")


def _reply(out: IO[bytes], status: int, body: bytes) -> None:
    out.write(bytes([status]) + len(body).to_bytes(_LENGTH, "big") + body)
    out.flush()


def serve(requests: IO[bytes], out: IO[bytes]) -> None:
    """Render requests until ``requests`` ends (the helper's loop; see the module docstring)."""
    _reply_ready(out)
    while True:
        header = requests.read(_LENGTH)
        if len(header) < _LENGTH:
            return  # the run closed its end (or died): nothing more to render
        size = int.from_bytes(header, "big")
        body = requests.read(size)
        if len(body) < size:
            return
        try:
            documents = _PlainUnpickler(io.BytesIO(body)).load()
            if not isinstance(documents, list):
                raise pickle.UnpicklingError("a request is a list of documents")
            rendered = [dump_records_yaml(document) for document in documents]
        except Exception as exc:  # noqa: BLE001 - any refusal is the run's to reproduce in-process
            _reply(out, _REFUSED, f"{type(exc).__name__}: {exc}"[:2000].encode("utf-8", "replace"))
            continue
        _reply(out, _RENDERED, b"".join(len(part).to_bytes(_LENGTH, "big") + part for part in rendered))


def _reply_ready(out: IO[bytes]) -> None:
    out.write(_READY)
    out.flush()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the run decides
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
