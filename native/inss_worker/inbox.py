"""The one queue the main loop serves: batches from stdin and from every data connection, in arrival
order, and the events that end the loop. Reader threads put; the main thread gets."""

from __future__ import annotations

import enum
import queue
from typing import BinaryIO, NamedTuple, Union

from .framing import Sender, read_frame
from .protocol import FrameStreamError, wall_ms
from .shared_memory import Payload, Region


class Received(NamedTuple):
    """A frame to serve and where to answer it."""

    msg: object
    payload: Payload
    out: Sender
    received_at_ms: float
    region: Region | None  # the scheduler's region, mapped for the connection it came on


class Event(enum.Enum):
    """What ends the main loop, once the batches received before it are answered."""

    EOF = "stdin closed"
    STOP = "a signal asked to stop"


Item = Union[Received, Event, FrameStreamError]


def read_stdin(stream: BinaryIO, inbox: queue.SimpleQueue[Item], out: Sender) -> None:
    """The stdin reader thread: whole frames onto the inbox, then EOF (or a FrameStreamError, which the
    main thread reports as fatal)."""
    try:
        while True:
            frame = read_frame(stream)
            if frame is None:
                inbox.put(Event.EOF)
                return
            inbox.put(Received(frame[0], frame[1], out, wall_ms(), None))
    except FrameStreamError as e:
        inbox.put(e)
    except BaseException as e:  # reported as fatal by the main thread
        inbox.put(FrameStreamError(f"reading stdin: {type(e).__name__}: {e}"))
