"""The data socket (docs/worker-protocol.md, "The data socket"): with INSS_WORKER_LISTEN (unix:PATH or
tcp:HOST:PORT), INSS_WORKER_SECRET and INSS_WORKER_IDENTITY set, the worker also listens there; the
scheduler connects, sends `attach` with the secret, then batches, and gets each answer on that
connection. An accept thread starts a reader thread per connection; each puts whole frames on the
main loop's inbox, so the next batch is received while one runs."""

from __future__ import annotations

import json
import os
import queue
import socket
import threading
from typing import Union

from .framing import SocketSender, read_frame
from .inbox import Item, Received
from .protocol import IDENTITY_KEYS, PROTOCOL_VERSION, FrameStreamError, Message, UsageError, log, wall_ms
from .shared_memory import Region, map_region

Address = Union[str, tuple[str, int]]
Listen = tuple[socket.AddressFamily, Address]
"""Where to listen: a family and the address bind() takes for it."""


def parse_listen(s: str) -> Listen:
    """unix:PATH or tcp:HOST:PORT -> (family, address); UsageError otherwise (as parseDataAddress)."""
    if s.startswith("unix:") and len(s) > 5:
        return socket.AF_UNIX, s[5:]
    if s.startswith("tcp:"):
        host, _, port = s[4:].rpartition(":")
        if host and port.isdigit() and int(port) <= 65535:
            host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
            return (socket.AF_INET6 if ":" in host else socket.AF_INET), (host, int(port))
    raise UsageError(f"INSS_WORKER_LISTEN: '{s}': expected unix:PATH or tcp:HOST:PORT")


def data_settings() -> tuple[Listen | None, str | None, Message | None]:
    """(listen address, secret, identity) from the agent's environment; (None, None, identity) without
    a data socket. The identity is INSS_WORKER_IDENTITY: a batch naming another worker is refused."""
    listen = os.environ.get("INSS_WORKER_LISTEN")
    secret = os.environ.get("INSS_WORKER_SECRET")
    raw = os.environ.get("INSS_WORKER_IDENTITY")
    identity = None
    if raw is not None:
        try:
            identity = json.loads(raw)
        except ValueError as e:
            raise UsageError(f"INSS_WORKER_IDENTITY: not JSON ({e})") from e
        if not isinstance(identity, dict) or any(k not in identity for k in IDENTITY_KEYS):
            raise UsageError(f"INSS_WORKER_IDENTITY: expected an object with {', '.join(IDENTITY_KEYS)}")
    if listen is not None and not secret:
        raise UsageError("INSS_WORKER_LISTEN is set but INSS_WORKER_SECRET is not")
    return (parse_listen(listen) if listen is not None else None), secret, identity


def listen_data(where: Listen) -> tuple[socket.socket, str]:
    """Binds the data socket; returns (server socket, the address to report in `ready`)."""
    family, addr = where
    server = socket.socket(family, socket.SOCK_STREAM)
    if isinstance(addr, str):
        try:
            os.unlink(addr)  # a stale socket file of a worker that died
        except FileNotFoundError:
            pass
        server.bind(addr)
        shown = f"unix:{addr}"
    else:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(addr)
        host = addr[0]
        port = server.getsockname()[1]
        shown = f"tcp:[{host}]:{port}" if ":" in host else f"tcp:{host}:{port}"
    server.listen(8)
    return server, shown


def start_data_socket(server: socket.socket, secret: str, inbox: queue.SimpleQueue[Item]) -> None:
    """Starts the accept thread (a daemon: it ends with the process)."""
    threading.Thread(target=_accept, args=(server, secret, inbox), name="data-accept", daemon=True).start()


def _accept(server: socket.socket, secret: str, inbox: queue.SimpleQueue[Item]) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=_read, args=(conn, secret, inbox), name="data-reader", daemon=True).start()


def _is_attach(msg: object, secret: str) -> bool:
    return (
        isinstance(msg, dict)
        and msg.get("type") == "attach"
        and msg.get("v") == PROTOCOL_VERSION
        and msg.get("secret") == secret
    )


def _read(conn: socket.socket, secret: str, inbox: queue.SimpleQueue[Item]) -> None:
    """One data connection: its first frame must be `attach` with the secret; then whole frames go onto
    the inbox with the connection to answer on. A broken connection ends only itself."""
    if conn.family != socket.AF_UNIX:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream = conn.makefile("rb", buffering=0)
    sender = SocketSender(conn)
    attached = False
    region: Region | None = None
    try:
        while True:
            frame = read_frame(stream)
            if frame is None:
                return
            msg, payload = frame
            if not attached:
                if not _is_attach(msg, secret):
                    log("data connection closed: its first frame is not an attach with this worker's secret")
                    conn.shutdown(socket.SHUT_RDWR)  # nothing was queued from it: nothing to answer
                    return
                attached = True
                shm = msg.get("shm") if isinstance(msg, dict) else None
                if isinstance(shm, dict):
                    region, why = map_region(shm)
                    answer: Message = {"v": PROTOCOL_VERSION, "type": "attached", "shm": region is not None}
                    if why:
                        answer["message"] = why
                    sender.send(answer)
                continue
            inbox.put(Received(msg, payload, sender, wall_ms(), region))
    except (FrameStreamError, OSError) as e:
        log(f"data connection closed: {e}")
    finally:
        try:
            conn.shutdown(socket.SHUT_RD)
        except OSError:
            pass
