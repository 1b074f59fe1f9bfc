#!/usr/bin/env python3
"""The PyTorch worker: serves one torchvision image classifier over the worker protocol.

The node agent starts one of these per (model, GPU, share) and talks to it over stdin (agent ->
worker) and stdout (worker -> agent) in the frames of src/protocol/frames.ts with the messages of
src/protocol/worker.ts; docs/worker-protocol.md is the reference. Logs go to stderr only: at start
this process moves its stdout to a private descriptor and points fd 1 at stderr, so a stray print
(ours, torch's, a C library's) can never corrupt the protocol stream.

  python3 native/torch_worker.py --model NAME [--device cpu|cuda|auto] [--weights FILE]
      [--max-batch 32] [--warmup-batches 3] [--seed 0] [--threads N] [--cudnn-benchmark]

Needs torch and torchvision only (Debian: python3-torch python3-torchvision, seen by /usr/bin/python3).
Nothing is downloaded: without --weights the model is randomly initialised after torch.manual_seed
(latency does not depend on the weights' values, and a seeded model is reproducible).

Contract:
- `ready` once, after the model is built and warmed up; no batch is read before it is sent.
- Batches are run one at a time in arrival order. A batch whose message or tensors are wrong gets an
  `error` naming what is wrong, and the worker goes on. latencyMs is the GPU execution latency of
  the latency model, t_inf: host-to-device copy, forward pass, device-to-host copy, synchronised.
- The data socket (docs/worker-protocol.md, "The data socket"): with INSS_WORKER_LISTEN (unix:PATH or
  tcp:HOST:PORT), INSS_WORKER_SECRET and INSS_WORKER_IDENTITY set, it also listens there; the scheduler
  connects, sends `attach` with the secret, then batches, and gets each answer on that connection.
  Batches from stdin and from data connections are served in one queue, in arrival order, each
  answered where it came from; a batch naming another worker identity gets an `error` with reason
  `wrong-worker`. Reader threads receive the next batch while one runs (pipelining).
- Inputs whose samples arrive as UINT8 images or JPEG/PNG (the input's `samples`) are decoded first
  (torchvision.io; JPEG on the GPU when the worker runs on one) and preprocessed by the rule of
  src/serving/image.ts (decode_batch below); that time is not in latencyMs. A sample that fails to
  decode is listed in the output's `failed` (its row is zero): that task alone gets the error.
- Shared memory (docs/worker-protocol.md, "Shared memory"): an `attach` naming the scheduler's region
  is answered `attached`; the worker maps the file read-only with `mmap` (unless INSS_WORKER_SHM=off)
  and reads the samples a batch gives as `slots` in place (torch.frombuffer over the mapping, copied
  only into the batch tensor). A connection's mapping is dropped when the connection ends; no view of
  a slot is kept once its batch is answered.
- SIGTERM (or SIGINT): the batches received before the signal are answered, then exit 0.
- stdin closing: the batches received are answered, then exit 0.
- A stream that is not frames, a CUDA error that leaves the context unusable, or any uncaught
  exception: `fatal`, then exit 1.

CUDA_VISIBLE_DEVICES, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and CUDA_MPS_PIPE_DIRECTORY are read by the
CUDA driver from the environment the agent gives; this worker only logs them.
"""
import argparse
import json
import mmap
import os
import queue
import signal
import socket
import struct
import sys
import threading
import time

PROTOCOL_VERSION = 1
MAX_HEADER_BYTES = 1 << 20  # as src/protocol/frames.ts
MAX_PAYLOAD_BYTES = 1 << 30
INPUT_NAME = "input"
OUTPUT_NAME = "output"
IMAGE_SHAPE = (3, 224, 224)  # per sample, NCHW as torchvision takes it
NUM_CLASSES = 1000

# inss model names (the paper's eight) -> torchvision builders; any other builder name passes as is.
MODELS = {
    "alexnet": "alexnet",
    "resnet50": "resnet50",
    "vgg16": "vgg16",
    "mnasnet": "mnasnet1_0",
    "mobilenet": "mobilenet_v2",
    "efficientnet": "efficientnet_b0",
    "resnet18": "resnet18",
    "vgg19": "vgg19",
}
BATCH_KEYS = {"v", "type", "id", "model", "size", "inputs", "running", "worker", "slots"}
IDENTITY_KEYS = ("workerId", "model", "gpu", "pct", "generation")
TENSOR_KEYS = {"name", "datatype", "shape", "byteLength"}
SAMPLE_ENCODINGS = ("FP32", "UINT8", "JPEG", "PNG")
# The preprocessing rule of src/serving/image.ts: ImageNet's mean and standard deviation (R, G, B).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def log(msg):
    print(f"torch_worker[{os.getpid()}]: {msg}", file=sys.stderr, flush=True)


class FrameStreamError(Exception):
    """stdin is not a frame stream; nothing after this can be trusted."""


class UsageError(Exception):
    """Bad command-line arguments."""


class Protocol:
    """Frames out on the private protocol descriptor. Called from the main thread only."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, msg, payload=b""):
        data = json.dumps(msg, separators=(",", ":")).encode("utf-8")
        # Pad the header with spaces (JSON whitespace) so the payload starts at a multiple of 8 bytes,
        # as frames.ts does: a reader can view it as a float array without copying.
        data += b" " * ((8 - (8 + len(data)) % 8) % 8)
        frame = b"".join((struct.pack(">II", len(data), len(payload)), data, payload))
        view = memoryview(frame)
        while view:  # one write; a pipe may take it in parts
            n = os.write(self.fd, view)
            view = view[n:]

    def fatal(self, message):
        try:
            self.send({"v": PROTOCOL_VERSION, "type": "fatal", "message": message})
        except OSError:
            pass  # the agent has gone; the exit code still says it


class SocketSender:
    """Frames out on one data connection (the answers to the batches that came on it). The main thread
    writes; the header and the payload go out in one sendmsg, without joining them first."""

    def __init__(self, sock):
        self.sock = sock

    def send(self, msg, payload=b""):
        data = json.dumps(msg, separators=(",", ":")).encode("utf-8")
        data += b" " * ((8 - (8 + len(data)) % 8) % 8)
        parts = [memoryview(struct.pack(">II", len(data), len(payload)) + data), memoryview(payload)]
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


def wall_ms():
    """Wall-clock ms since the Unix epoch (per-hop tracing; comparable across processes of one host)."""
    return time.time() * 1000.0


def parse_listen(s):
    """unix:PATH or tcp:HOST:PORT -> (family, address); UsageError otherwise (as parseDataAddress)."""
    if s.startswith("unix:") and len(s) > 5:
        return socket.AF_UNIX, s[5:]
    if s.startswith("tcp:"):
        host, _, port = s[4:].rpartition(":")
        if host and port.isdigit() and int(port) <= 65535:
            host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
            return (socket.AF_INET6 if ":" in host else socket.AF_INET), (host, int(port))
    raise UsageError(f"INSS_WORKER_LISTEN: '{s}': expected unix:PATH or tcp:HOST:PORT")


def serve_data(server, secret, inbox):
    """The accept thread of the data socket: a reader thread per connection."""
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=data_reader, args=(conn, secret, inbox), name="data-reader", daemon=True).start()


def data_reader(conn, secret, inbox):
    """One data connection: its first frame must be `attach` with the secret; then whole frames go onto
    the inbox with the connection to answer on. A broken connection ends only itself."""
    if conn.family != socket.AF_UNIX:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream = conn.makefile("rb", buffering=0)
    sender = SocketSender(conn)
    attached = False
    region = None
    try:
        while True:
            frame = read_frame(stream)
            if frame is None:
                return
            msg, payload = frame
            if not attached:
                if not (isinstance(msg, dict) and msg.get("type") == "attach" and msg.get("v") == PROTOCOL_VERSION and msg.get("secret") == secret):
                    log("data connection closed: its first frame is not an attach with this worker's secret")
                    conn.shutdown(socket.SHUT_RDWR)  # nothing was queued from it: nothing to answer
                    return
                attached = True
                if isinstance(msg.get("shm"), dict):
                    region, why = map_region(msg["shm"])
                    answer = {"v": PROTOCOL_VERSION, "type": "attached", "shm": region is not None}
                    if why:
                        answer["message"] = why
                    sender.send(answer)
                continue
            inbox.put((msg, payload, sender, wall_ms(), region))
    except (FrameStreamError, OSError) as e:
        log(f"data connection closed: {e}")
    finally:
        try:
            conn.shutdown(socket.SHUT_RD)
        except OSError:
            pass


def map_region(shm):
    """(read-only mapping of the scheduler's region, None) or (None, why not), for an `attach`'s `shm`."""
    if os.environ.get("INSS_WORKER_SHM") == "off":
        return None, "INSS_WORKER_SHM=off"
    path, size = shm.get("path"), shm.get("bytes")
    if not isinstance(path, str) or not isinstance(size, int) or size <= 0:
        return None, "attach.shm: expected {path, bytes}"
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            region = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
    except (OSError, ValueError) as e:
        return None, f"{path}: {e}"
    if len(region) != size:
        return None, f"{path} has {len(region)} bytes, attach says {size}"
    return memoryview(region), None


class Samples:
    """A batch input whose samples are views (of the region, or of the payload), as src/protocol/shm.ts
    sampleViews finds them; len() is their total bytes, as a payload's would be."""

    def __init__(self, views):
        self.views = views

    def __len__(self):
        return sum(len(v) for v in self.views)


def slot_samples(msg, payload, region):
    """(Samples, None) for a batch with `slots`, (payload, None) for one without, or (None, why refused)."""
    slots = msg.get("slots") if isinstance(msg, dict) else None
    if slots is None:
        return payload, None
    inputs = msg.get("inputs")
    size = msg.get("size")
    if not isinstance(slots, list) or not isinstance(inputs, list) or len(inputs) != 1 or not isinstance(inputs[0], dict) \
            or not isinstance(size, int) or len(slots) != size:
        return None, "slots: expected one entry per sample of the one input"
    t = inputs[0]
    per = 4 * IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2]
    smps = t.get("samples")
    lengths = [s.get("byteLength") if isinstance(s, dict) else None for s in smps] if isinstance(smps, list) else [per] * size
    if len(lengths) != size:
        return None, f"input '{t.get('name')}': samples: expected a list of {size}"
    views, at, data = [], 0, memoryview(payload)
    for k, (slot, n) in enumerate(zip(slots, lengths)):
        if not isinstance(n, int):
            return None, f"input '{t.get('name')}': sample {k}: no byteLength"
        if slot is None:
            if at + n > len(data):
                return None, f"input '{t.get('name')}': the payload has {len(data)} bytes, fewer than its inline samples need"
            views.append(data[at:at + n])
            at += n
            continue
        if region is None:
            return None, f"input '{t.get('name')}': sample {k} is in shared memory, but this worker has not mapped a region"
        if not (isinstance(slot, list) and len(slot) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in slot)):
            return None, f"slots.{k}: expected [offset, byteLength] or null"
        offset, length = slot
        if length != n:
            return None, f"input '{t.get('name')}': sample {k}: its slot holds {length} bytes, the input says {n}"
        if offset < 0 or offset + length > len(region):
            return None, f"input '{t.get('name')}': sample {k}: slot [{offset}, {length}] is outside the region of {len(region)} bytes"
        views.append(region[offset:offset + length])
    if at != len(data):
        return None, f"input '{t.get('name')}': the payload has {len(data)} bytes, its inline samples add up to {at}"
    return Samples(views), None


def read_exact(stream, n, buf=None):
    """n bytes from a raw binary stream into a fresh bytearray (writable, for torch.frombuffer).
    None at a clean end of stream before the first byte; FrameStreamError at an end in mid-frame."""
    buf = bytearray(n) if buf is None else buf
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


EOF = ("eof",)
STOP = ("stop",)


def read_frame(stream):
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


def reader(stream, inbox, proto):
    """The reader thread: whole frames from stdin onto the inbox, then EOF (or a FrameStreamError)."""
    try:
        while True:
            frame = read_frame(stream)
            if frame is None:
                inbox.put(EOF)
                return
            inbox.put((frame[0], frame[1], proto, wall_ms(), None))
    except FrameStreamError as e:
        inbox.put(e)
    except BaseException as e:  # noqa: BLE001 - reported as fatal by the main thread
        inbox.put(FrameStreamError(f"reading stdin: {type(e).__name__}: {e}"))


def check_batch(msg, payload, max_batch, model):
    """What is wrong with a batch message and its payload, or None. Mirrors ToWorkerSchema plus the
    model's signature (one FP32 `input` of [size, 3, 224, 224]), as the simulated worker checks."""
    if not isinstance(msg, dict):
        return "message is not a JSON object"
    if msg.get("v") != PROTOCOL_VERSION:
        return f"v: expected {PROTOCOL_VERSION}, got {json.dumps(msg.get('v'))}"
    if msg.get("type") != "batch":
        return f"type: expected 'batch', got {json.dumps(msg.get('type'))}"
    unknown = sorted(set(msg) - BATCH_KEYS)
    if unknown:
        return f"unknown keys: {', '.join(unknown)}"
    if not isinstance(msg.get("id"), str) or not msg["id"]:
        return "id: expected a non-empty string"
    if msg.get("model") != model:
        return f"batch for model {json.dumps(msg.get('model'))} refused: this worker runs '{model}'"
    size = msg.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        return f"size: expected a positive integer, got {json.dumps(size)}"
    if size > max_batch:
        return f"size: {size} is over this worker's --max-batch {max_batch}"
    inputs = msg.get("inputs")
    if not isinstance(inputs, list):
        return "inputs: expected an array"
    if len(inputs) != 1:
        return f"expected 1 input, got {len(inputs)}"
    t = inputs[0]
    if not isinstance(t, dict) or not TENSOR_KEYS <= set(t) <= TENSOR_KEYS | {"samples"}:
        return f"inputs.0: expected an object with keys {', '.join(sorted(TENSOR_KEYS))} (and samples)"
    if t["name"] != INPUT_NAME:
        return f"input '{t['name']}': expected '{INPUT_NAME}'"
    if t["datatype"] != "FP32":
        return f"input '{t['name']}': datatype {t['datatype']}, expected FP32"
    want = [size, *IMAGE_SHAPE]
    shape = t["shape"]
    if not isinstance(shape, list) or shape != want:
        shown = ",".join(str(d) for d in shape) if isinstance(shape, list) else json.dumps(shape)
        return f"input '{t['name']}': shape [{shown}], expected [{','.join(str(d) for d in want)}]"
    per = IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2]
    if "samples" not in t:
        expected = 4 * size * per
        if t["byteLength"] != expected or len(payload) != expected:
            return f"input '{t['name']}': {len(payload)} payload bytes (byteLength {t['byteLength']}), expected {expected}"
        return None
    # As agent/decode.ts checkBatchInput: one sample per batch row, sizes fixed for FP32 and UINT8.
    samples = t["samples"]
    if not isinstance(samples, list) or len(samples) != size:
        return f"input '{t['name']}': samples: expected a list of {size}"
    total = 0
    for k, smp in enumerate(samples):
        if not isinstance(smp, dict) or set(smp) != {"encoding", "byteLength"} or smp["encoding"] not in SAMPLE_ENCODINGS \
                or not isinstance(smp["byteLength"], int) or isinstance(smp["byteLength"], bool) or smp["byteLength"] < 0:
            return f"input '{t['name']}': sample {k}: expected {{encoding: {'|'.join(SAMPLE_ENCODINGS)}, byteLength}}"
        fixed = {"FP32": 4 * per, "UINT8": per}.get(smp["encoding"])
        if fixed is not None and smp["byteLength"] != fixed:
            return f"input '{t['name']}': sample {k} ({smp['encoding']}) is {smp['byteLength']} bytes, expected {fixed}"
        total += smp["byteLength"]
    if t["byteLength"] != total or len(payload) != total:
        return f"input '{t['name']}': {len(payload)} payload bytes (byteLength {t['byteLength']}), its samples add up to {total}"
    return None


def resized_axis(length, other, side):
    """Step 2 of the preprocessing rule for one axis: the resized length and where the crop starts."""
    resized = side if length <= other else (side * length) // other
    return resized, (resized - side) // 2


class Preprocess:
    """The preprocessing rule of src/serving/image.ts (docs/serving.md, "Images"), on the worker's device:
    8-bit RGB CHW -> resize the shorter side to 224 (bilinear, align_corners=False, no antialiasing),
    crop the centre, scale and normalise with ImageNet's mean and std, as x * scale - bias."""

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.cuda = device.type == "cuda"
        import torchvision.io as tio  # noqa: E402 - torch is imported late (see run)
        self.tio = tio
        self.scale = torch.tensor([1.0 / (255.0 * s) for s in IMAGENET_STD], dtype=torch.float32, device=device).view(3, 1, 1)
        self.bias = torch.tensor([m / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD)], dtype=torch.float32, device=device).view(3, 1, 1)

    def pixels(self, img):
        """uint8 [3, H, W] on the device -> float32 [3, 224, 224]."""
        torch = self.torch
        side = IMAGE_SHAPE[2]
        x = img.to(self.device, dtype=torch.float32)
        _, h, w = x.shape
        if (h, w) != (side, side):
            rh, top = resized_axis(h, w, side)
            rw, left = resized_axis(w, h, side)
            x = torch.nn.functional.interpolate(x[None], size=(rh, rw), mode="bilinear", align_corners=False)[0]
            x = x[:, top:top + side, left:left + side]
        return x * self.scale - self.bias

    def decode(self, encoding, data):
        """An encoded image's bytes -> uint8 [3, H, W] (RGB). JPEG on the GPU (nvjpeg) when there is one."""
        tio = self.tio
        raw = self.torch.frombuffer(data, dtype=self.torch.uint8) if len(data) > 0 else self.torch.empty(0, dtype=self.torch.uint8)
        if encoding == "JPEG":
            if self.cuda:
                try:
                    return tio.decode_jpeg(raw, mode=tio.ImageReadMode.RGB, device=self.device)
                except RuntimeError:
                    pass  # nvjpeg does not take every JPEG the CPU decoder does (e.g. some grey ones): try the CPU
            return tio.decode_jpeg(raw, mode=tio.ImageReadMode.RGB)
        return tio.decode_png(raw, mode=tio.ImageReadMode.RGB)

    def batch(self, t, payload, size):
        """A checked batch input -> (float32 [size, 3, 224, 224], failed samples). FP32 samples are taken
        as they are, UINT8 ones scaled and normalised, JPEG/PNG ones decoded first; a sample that fails
        to decode is reported (its row stays zero)."""
        torch = self.torch
        views = payload.views if isinstance(payload, Samples) else None
        if "samples" not in t:
            if views is None:
                return torch.frombuffer(payload, dtype=torch.float32).view(size, *IMAGE_SHAPE), []
            # Samples in place (shared memory): each copied once, into the batch tensor.
            x = torch.empty(size, *IMAGE_SHAPE, dtype=torch.float32)
            for k, v in enumerate(views):
                x[k] = torch.frombuffer(v, dtype=torch.float32).view(*IMAGE_SHAPE)
            return x, []
        x = torch.zeros(size, *IMAGE_SHAPE, dtype=torch.float32, device=self.device)
        failed = []
        view = memoryview(payload) if views is None else None
        at = 0
        for k, smp in enumerate(t["samples"]):
            n = smp["byteLength"]
            data = views[k] if views is not None else view[at:at + n]
            at += n
            if smp["encoding"] == "FP32":
                x[k] = torch.frombuffer(data, dtype=torch.float32).view(*IMAGE_SHAPE)
            elif smp["encoding"] == "UINT8":
                x[k] = self.pixels(torch.frombuffer(data, dtype=torch.uint8).view(*IMAGE_SHAPE))
            else:
                try:
                    x[k] = self.pixels(self.decode(smp["encoding"], data))
                except RuntimeError as e:
                    first = str(e).splitlines()[0] if str(e) else type(e).__name__
                    failed.append({"index": k, "message": f"input '{t['name']}': the {smp['encoding']} image could not be decoded: {first}"})
        return x, failed


def parse_args(argv):
    class Parser(argparse.ArgumentParser):
        def error(self, message):  # reported as `fatal` rather than argparse's exit 2
            raise UsageError(message)

    ap = Parser(prog="torch_worker.py", description="inss PyTorch worker (docs/worker-protocol.md)")
    ap.add_argument("--model", required=True, help="inss name (resnet50, mobilenet, ...) or a torchvision builder name")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="auto: cuda when available")
    ap.add_argument("--weights", default=None, help="a state_dict .pth file (random init otherwise)")
    ap.add_argument("--max-batch", type=int, default=32)
    ap.add_argument("--warmup-batches", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for torch (torch's default otherwise)")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="let cuDNN autotune per input shape (faster kernels; the first batch of each size is slow)")
    a = ap.parse_args(argv)
    if a.max_batch < 1:
        raise UsageError(f"--max-batch: expected >= 1, got {a.max_batch}")
    if a.warmup_batches < 0:
        raise UsageError(f"--warmup-batches: expected >= 0, got {a.warmup_batches}")
    if a.threads is not None and a.threads < 1:
        raise UsageError(f"--threads: expected >= 1, got {a.threads}")
    return a


def build_model(torch, torchvision, args):
    builder = MODELS.get(args.model, args.model)
    known = torchvision.models.list_models(module=torchvision.models)
    if builder not in known:
        raise UsageError(f"--model {args.model}: not a torchvision classification model "
                         f"(inss names: {', '.join(MODELS)}; or one of torchvision's: {', '.join(known)})")
    torch.manual_seed(args.seed)  # before building: the random init is the model
    model = torchvision.models.get_model(builder, weights=None)
    if args.weights:
        state = torch.load(args.weights, map_location="cpu")
        if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
            state = state["state_dict"]
        model.load_state_dict(state)
    return builder, model.eval()


class Worker:
    def __init__(self, torch, model, device, max_batch, name, identity):
        self.torch = torch
        self.preprocess = Preprocess(torch, device)
        self.name = name  # the inss model name (--model): a batch for another model is refused
        self.identity = identity  # INSS_WORKER_IDENTITY (a dict), or None: a batch naming another is refused
        self.model = model
        self.device = device
        self.max_batch = max_batch
        self.cuda = device.type == "cuda"

    def forward(self, x_host):
        """t_inf of one batch: upload, forward, download, synchronised. Returns (output on host, ms)."""
        torch = self.torch
        if self.cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.inference_mode():
            y = self.model(x_host.to(self.device, non_blocking=False))
            y = y.to("cpu", dtype=torch.float32)
        if self.cuda:
            torch.cuda.synchronize()
        return y, (time.perf_counter() - t0) * 1000.0

    def warm_up(self, batches):
        """Lazy initialisation (CUDA context, cuDNN handles, allocator pool) before `ready`. On a GPU the
        last warm-up batch is --max-batch, so the allocator pool is sized for the largest batch; on the
        CPU there is nothing lazy to size and a big batch would only delay `ready`."""
        for i in range(batches):
            size = self.max_batch if self.cuda and i == batches - 1 else 1
            self.forward(self.torch.zeros(size, *IMAGE_SHAPE))

    def not_mine(self, msg):
        """Why a batch naming a worker identity is not this worker's, or None."""
        named = msg.get("worker") if isinstance(msg, dict) else None
        if not isinstance(named, dict) or self.identity is None:
            return None
        if all(named.get(k) == self.identity.get(k) for k in IDENTITY_KEYS):
            return None
        return f"batch for worker {describe_worker(named)} refused: this worker is {describe_worker(self.identity)}"

    def serve(self, msg, payload, out, received_at, region=None):
        """Answers one batch on `out` (stdin's answer stream or its data connection) with a `result` or an
        `error`. Raises (-> `fatal`) on a CUDA error other than out-of-memory, which leaves the context
        unusable; the agent then restarts the worker."""
        torch = self.torch
        bid = msg.get("id") if isinstance(msg, dict) and isinstance(msg.get("id"), str) else ""
        refused = self.not_mine(msg)
        if refused:
            out.send({"v": PROTOCOL_VERSION, "type": "error", "id": bid, "message": refused, "reason": "wrong-worker"})
            return
        payload, problem = slot_samples(msg, payload, region)
        problem = problem or check_batch(msg, payload, self.max_batch, self.name)
        if problem:
            out.send({"v": PROTOCOL_VERSION, "type": "error", "id": bid, "message": problem})
            return
        size = msg["size"]
        try:
            x, failed = self.preprocess.batch(msg["inputs"][0], payload, size)
            y, ms = self.forward(x)
        except RuntimeError as e:
            text = str(e)
            if "out of memory" in text:
                if self.cuda:
                    torch.cuda.empty_cache()
                out.send({"v": PROTOCOL_VERSION, "type": "error", "id": bid, "message": f"out of memory: {text.splitlines()[0]}"})
                return
            if self.cuda and "CUDA" in text:
                # A CUDA error other than OOM usually poisons the context; the agent restarts the worker.
                raise
            out.send({"v": PROTOCOL_VERSION, "type": "error", "id": bid, "message": f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"})
            return
        if tuple(y.shape) != (size, NUM_CLASSES):
            out.send({"v": PROTOCOL_VERSION, "type": "error", "id": bid,
                      "message": f"model output has shape {list(y.shape)}, expected [{size},{NUM_CLASSES}]"})
            return
        y_bytes = y.contiguous().numpy().tobytes()  # little-endian: checked at start
        ref = {"name": OUTPUT_NAME, "datatype": "FP32", "shape": [size, NUM_CLASSES], "byteLength": len(y_bytes)}
        if failed:
            ref["failed"] = failed
        out.send(
            {"v": PROTOCOL_VERSION, "type": "result", "id": bid, "latencyMs": ms,
             "outputs": [ref], "receivedAtMs": received_at, "answeredAtMs": wall_ms()},
            y_bytes,
        )


def describe_worker(w):
    """As describeWorker in src/protocol/agent.ts: 'w2 (mobilenet on GPU 0 at 50%, generation 7)'."""
    pct = w.get("pct")
    pct = int(pct) if isinstance(pct, float) and pct.is_integer() else pct
    return f"{w.get('workerId')} ({w.get('model')} on GPU {w.get('gpu')} at {pct}%, generation {w.get('generation')})"


def data_settings():
    """(listen address, secret, identity) from the agent's environment; (None, None, identity) without a data socket."""
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


def listen_data(where):
    """Binds the data socket; returns (server socket, the address to report in `ready`)."""
    family, addr = where
    server = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_UNIX:
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


def run(argv, proto):
    args = parse_args(argv)
    if sys.byteorder != "little":
        raise RuntimeError("the worker protocol carries little-endian tensors; this host is big-endian")
    t_start = time.perf_counter()

    # Frames arrive on a reader thread (torch releases the GIL while it computes, so the next batch is
    # read while this one runs); the main thread serves them in order. A signal handler only enqueues
    # STOP (SimpleQueue.put is reentrant), so what was received before the signal is answered first.
    # Installed before the slow start, so a worker stopped while warming up still exits 0.
    # The handler does nothing else: a print from it could re-enter stderr's writer mid-write.
    inbox = queue.SimpleQueue()
    stopped_by = []

    def on_signal(signum, _frame):
        stopped_by.append(signal.Signals(signum).name)
        inbox.put(STOP)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    import torch  # noqa: E402 - imported after the protocol descriptor is set up, so its prints go to stderr
    import torchvision
    import warnings

    # Samples in the scheduler's region are read through a read-only mapping, never written.
    warnings.filterwarnings("ignore", message="The given buffer is not writable")

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    env = {k: os.environ.get(k, "(unset)") for k in ("CUDA_VISIBLE_DEVICES", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_PIPE_DIRECTORY")}
    log(f"torch {torch.__version__}, torchvision {torchvision.__version__}, python {sys.version.split()[0]} ({sys.executable}); "
        + ", ".join(f"{k}={v}" for k, v in env.items()))

    want = args.device
    if want == "auto":
        want = "cuda" if torch.cuda.is_available() else "cpu"
    if want == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: torch sees no CUDA device (CUDA_VISIBLE_DEVICES="
                         f"{env['CUDA_VISIBLE_DEVICES']}, torch built with CUDA {torch.version.cuda})")
    if want == "cuda":
        device = torch.device("cuda", 0)  # the one GPU CUDA_VISIBLE_DEVICES leaves visible
        torch.backends.cudnn.benchmark = args.cudnn_benchmark
        device_name = f"cuda:0 ({torch.cuda.get_device_name(0)})"
    else:
        device = torch.device("cpu")
        device_name = "cpu"

    listen_at, secret, identity = data_settings()
    if identity is not None and identity.get("model") != args.model:
        raise UsageError(f"INSS_WORKER_IDENTITY names model {json.dumps(identity.get('model'))} but --model is '{args.model}'")
    builder, model = build_model(torch, torchvision, args)
    model = model.to(device)
    worker = Worker(torch, model, device, args.max_batch, args.model, identity)
    worker.warm_up(args.warmup_batches)
    warmup_ms = (time.perf_counter() - t_start) * 1000.0
    log(f"model {args.model} ({builder}, seed {args.seed}{', weights ' + args.weights if args.weights else ''}) on {device_name}, "
        f"{torch.get_num_threads()} CPU threads, max batch {args.max_batch}, ready after {warmup_ms:.0f} ms")

    if stopped_by:
        log(f"{stopped_by[0]} before ready: exiting")
        return 0
    ready = {"v": PROTOCOL_VERSION, "type": "ready", "model": args.model, "pid": os.getpid(), "warmupMs": warmup_ms, "device": device_name}
    if listen_at is not None:
        try:
            server, ready["listen"] = listen_data(listen_at)
        except OSError as e:
            raise UsageError(f"INSS_WORKER_LISTEN={os.environ.get('INSS_WORKER_LISTEN')}: cannot listen: {e}") from e
        threading.Thread(target=serve_data, args=(server, secret, inbox), name="data-accept", daemon=True).start()
    proto.send(ready)
    threading.Thread(target=reader, args=(sys.stdin.buffer.raw, inbox, proto), name="stdin-reader", daemon=True).start()

    served = 0
    while True:
        item = inbox.get()
        if item is EOF or item is STOP:
            why = "stdin closed" if item is EOF else f"{stopped_by[0]}: answered the batches received before it"
            log(f"{why}; exiting after {served} batches")
            return 0
        if isinstance(item, FrameStreamError):
            raise item
        msg, payload, out, received_at, region = item
        worker.serve(msg, payload, out, received_at, region)
        served += 1


def main():
    # The protocol gets stdout's descriptor to itself; fd 1 and sys.stdout now lead to stderr.
    proto = Protocol(os.dup(1))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        code = run(sys.argv[1:], proto)
    except UsageError as e:
        log(f"fatal: {e}")
        proto.fatal(str(e))
        code = 1
    except BaseException as e:  # noqa: BLE001 - the contract: report, then exit 1
        import traceback

        traceback.print_exc(file=sys.stderr)
        proto.fatal(f"{type(e).__name__}: {e}")
        code = 1
    sys.stderr.flush()
    # Skip interpreter teardown (the daemon reader thread sits in a read; torch's atexit work is not
    # needed): every answer is already written, unbuffered, to the protocol descriptor.
    os._exit(code)


if __name__ == "__main__":
    main()
