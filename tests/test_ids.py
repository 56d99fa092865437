"""Request and execution ids: version-4 UUIDs from a private generator, never repeated across a fork."""

from __future__ import annotations

import os
import random
import re
import uuid

from capplan.core import ids
from capplan.executor.send_observer import new_request_id
from capplan.trials.run_folder.call_journal import new_execution_id


def test_ids_are_version_4_uuids_written_as_uuid_writes_them() -> None:
    for hex_id in (ids.uuid4_hex(), new_request_id(), new_execution_id()):
        assert re.fullmatch(r"[0-9a-f]{32}", hex_id)
        parsed = uuid.UUID(hex=hex_id)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122) and parsed.hex == hex_id
    text = ids.uuid4_text()
    assert str(uuid.UUID(text)) == text and uuid.UUID(text).version == 4


def test_ids_do_not_repeat_and_no_seed_of_the_random_module_repeats_them() -> None:
    random.seed(7)
    first = [ids.uuid4_hex() for _ in range(1000)]
    random.seed(7)
    second = [ids.uuid4_hex() for _ in range(1000)]
    assert len(set(first + second)) == 2000


def test_a_forked_child_draws_other_ids_than_its_parent() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent, then out at once (no test teardown here)
        os.close(read)
        os.write(write, " ".join(ids.uuid4_hex() for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode().split()
    os.waitpid(pid, 0)
    parent = [ids.uuid4_hex() for _ in range(3)]
    assert len(child) == 3 and not set(child) & set(parent)
