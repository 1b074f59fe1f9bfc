"""Frames on the wire (src/protocol/frames.ts): an 8-byte prefix (header and payload lengths, u32
big-endian), a UTF-8 JSON header padded with spaces so the payload starts at a multiple of 8 bytes,
then the payload. Readers for raw binary streams and the two writers: the private stdout descriptor
and a data connection."""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import BinaryIO, Protocol, Union

from .protocol import MAX_HEADER_BYTES, MAX_PAYLOAD_BYTES, PROTOCOL_VERSION, FrameStreamError, Message, log

Bytes = Union[bytes, bytearray, memoryview]
Frame = tuple[object, bytearray]
"""A decoded frame: its header (any JSON value; checked by the reader of the message) and its payload."""


class Sender(Protocol):
    """Where the answers to a batch go: the stream the batch came on."""

    def send(self, msg: Message, payload: Bytes = b"") -> None: ...


def frame_head(msg: Message, payload_bytes: int) -> bytes:
    """The prefix and the padded header of a frame, as frameHead in src/protocol/frames.ts: a reader can
    view the payload as a float array without copying it."""
    data = json.dumps(msg, separators=(",", ":")).encode("utf-8")
    data += b" " * ((8 - (8 + len(data)) % 8) % 8)
    return struct.pack(">II", len(data), payload_bytes) + data


class FdSender:
    """Frames out on the private protocol descriptor (stdout's). Called from the main thread only."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, msg: Message, payload: Bytes = b"") -> None:
        view = memoryview(b"".join((frame_head(msg, len(payload)), payload)))
        while view:  # one write; a pipe may take it in parts
            n = os.write(self.fd, view)
            view = view[n:]

    def fatal(self, message: str) -> None:
        try:
            self.send({"v": PROTOCOL_VERSION, "type": "fatal", "message": message})
        except OSError:
            pass  # the agent has gone; the exit code still says it


class SocketSender:
    """Frames out on one data connection (the answers to the batches that came on it). The main thread
    writes; the header and the payload go out in one sendmsg, without joining them first."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, msg: Message, payload: Bytes = b"") -> None:
        parts = [memoryview(frame_head(msg, len(payload))), memoryview(payload)]
        try:
            while parts:
                n = self.sock.sendmsg([p for p in parts if len(p)])
                while parts and n >= len(parts[0]):
                    n -= len(parts[0])
                    parts.pop(0)
                if parts:
                    parts[0] = parts[0][n:]
        except OSError as e:
            log(f"data connection: answer not sent ({e}); the scheduler has gone")


def read_exact(stream: BinaryIO, n: int) -> bytearray | None:
    """n bytes from a raw binary stream into a fresh bytearray (writable, for torch.frombuffer).
    None at a clean end of stream before the first byte; FrameStreamError at an end in mid-frame."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = stream.readinto(view[got:])
        if not k:
            if got == 0:
                return None
            raise FrameStreamError(f"stdin closed inside a frame ({got} of {n} bytes)")
        got += k
    return buf


def read_frame(stream: BinaryIO) -> Frame | None:
    """One whole frame (message, payload) from a raw binary stream; None at a clean end of stream."""
    prefix = read_exact(stream, 8)
    if prefix is None:
        return None
    h, p = struct.unpack(">II", prefix)
    if h > MAX_HEADER_BYTES:
        raise FrameStreamError(f"frame header of {h} bytes is over {MAX_HEADER_BYTES}")
    if p > MAX_PAYLOAD_BYTES:
        raise FrameStreamError(f"frame payload of {p} bytes is over {MAX_PAYLOAD_BYTES}")
    header = read_exact(stream, h) if h > 0 else bytearray()
    if header is None:
        raise FrameStreamError("stream closed inside a frame (after its prefix)")
    payload = read_exact(stream, p) if p > 0 else bytearray()
    if payload is None:
        raise FrameStreamError("stream closed inside a frame (before its payload)")
    try:
        msg = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FrameStreamError(f"frame header is not JSON: {e}") from e
    return msg, payload
