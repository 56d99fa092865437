"""The worker channel's framing (seam *channel framing*, ``trials/backends/processes/channel.py``).

Messages go over a real socket pair: every message comes back whole and in order, however the bytes
are cut on the way; several that arrived together are taken from one receive; an end that closes,
even part-way through a message, is an ``EOFError``; the reference mode reads the same messages
with a receive for each length and each message.
"""

from __future__ import annotations

import pickle
import socket
import threading
from typing import Any

import pytest

from capplan.trials.backends.processes.channel import Channel
from tests.mode_switch import mode


class CountedSocket(socket.socket):
    """A socket that counts its receives (the channel's only way to read)."""

    receives = 0

    def recv(self, size: int, flags: int = 0) -> bytes:
        type(self).receives += 1
        return super().recv(size, flags)


def pair() -> tuple[Channel, socket.socket]:
    ours, theirs = socket.socketpair()
    counted = CountedSocket(ours.family, ours.type, fileno=ours.detach())
    CountedSocket.receives = 0
    return Channel(counted), theirs


def frame(message: tuple[Any, ...]) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(4, "big") + data


MESSAGES = [("send", 1, "agent", 0, "req-1", 1, None), ("call", 1, '{"cost_usd":null}', None, True, "req-1"),
            ("done", 7, {"trajectory": {"messages": ["x" * 200_000]}}, ("t", "m", None))]


def test_messages_come_back_whole_and_in_order_from_both_ends() -> None:
    ours, theirs = socket.socketpair()
    left, right = Channel(ours), Channel(theirs)
    sender = threading.Thread(target=lambda: [left.send(message) for message in MESSAGES])
    sender.start()
    try:
        assert [right.recv() for _ in MESSAGES] == MESSAGES
        sender.join(60)
        right.send(("granted", "req-1"))
        assert left.recv() == ("granted", "req-1")
    finally:
        left.close()
        right.close()


def receives_for_ten_sent_together() -> int:
    """How many receives the channel makes for ten small messages that arrived in one piece (all came back)."""
    channel, theirs = pair()
    try:
        small = MESSAGES[:2] * 5
        theirs.sendall(b"".join(frame(m) for m in small))
        assert [channel.recv() for _ in small] == small
        return CountedSocket.receives
    finally:
        channel.close()
        theirs.close()


@pytest.mark.fast_side
def test_messages_that_arrived_together_take_one_receive() -> None:
    assert receives_for_ten_sent_together() == 1


@mode(True)
def test_the_reference_mode_reads_each_length_and_each_message() -> None:
    assert receives_for_ten_sent_together() == 2 * 10


@pytest.mark.parametrize("cut", [1, 3, 4, 5, 4096])
def test_bytes_cut_anywhere_still_make_the_messages(cut: int) -> None:
    channel, theirs = pair()
    data = b"".join(frame(m) for m in MESSAGES[:2]) * 3 + frame(MESSAGES[2])
    # sent piece by piece from another thread (the last message is larger than a socket's buffer)
    sender = threading.Thread(target=lambda: [theirs.sendall(data[i:i + cut]) for i in range(0, len(data), cut)])
    sender.start()
    try:
        assert [channel.recv() for _ in range(7)] == MESSAGES[:2] * 3 + MESSAGES[2:]
    finally:
        sender.join(60)
        channel.close()
        theirs.close()
    assert not sender.is_alive()


@pytest.mark.parametrize("sent", [b"", b"\x00\x00", frame(MESSAGES[0])[:-3]])
def test_an_end_that_closes_part_way_is_an_eof(sent: bytes) -> None:
    channel, theirs = pair()
    try:
        theirs.sendall(frame(MESSAGES[1]) + sent)
        theirs.close()
        assert channel.recv() == MESSAGES[1]
        with pytest.raises(EOFError):
            channel.recv()
    finally:
        channel.close()


@pytest.mark.fast_side
def test_messages_sent_together_arrive_in_order_and_the_buffer_says_what_is_whole() -> None:
    # seam *reader batches*: a reader answers every send one receive brought in one send_many
    ours, theirs = socket.socketpair()
    sending, receiving = Channel(ours), Channel(theirs)
    messages = [("granted", f"r{n}") for n in range(3)]
    assert not receiving.has_message()
    sending.send_many(messages)
    assert receiving.recv() == messages[0]
    assert receiving.has_message()  # the other two came with the first: no wait for them
    assert [receiving.recv(), receiving.recv()] == messages[1:]
    assert not receiving.has_message()
    sending.send(("granted", "r3"))
    theirs_socket = receiving._socket
    part = frame(("granted", "r4"))
    ours.sendall(part[:5])  # a message cut short is not whole
    assert receiving.recv() == ("granted", "r3")
    assert not receiving.has_message()
    ours.sendall(part[5:])
    assert receiving.recv() == ("granted", "r4")
    theirs_socket.close()
    ours.close()


def test_the_reference_mode_sends_each_message_of_a_batch_on_its_own() -> None:
    ours, theirs = socket.socketpair()
    sent: list[bytes] = []

    class Counted(socket.socket):
        def sendall(self, data: Any, flags: int = 0) -> None:
            sent.append(bytes(data))
            super().sendall(data, flags)

    counted = Counted(ours.family, ours.type, fileno=ours.detach())
    channel, receiving = Channel(counted), Channel(theirs)
    with mode(True):
        channel.send_many([("granted", "a"), ("granted", "b")])
    with mode(False):
        channel.send_many([("granted", "c"), ("granted", "d")])
    assert len(sent) == 3
    assert [receiving.recv() for _ in range(4)] == [("granted", x) for x in "abcd"]
    counted.close()
    theirs.close()
