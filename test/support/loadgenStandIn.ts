// The stand-in server of test/integration/loadgen.test.ts: GET /v2/models/{name} and POST
// /v2/models/{name}/infer, every request checked with the scheduler's own KServe codec and recorded in
// `seen`; one model always fails with 503, one never answers in time.
import type http from 'node:http';
import { encodeInferResponse, errorBody, modelMetadata, parseInferRequest } from '../../scheduler/kserve.js';
import { type ModelSignature, modelSignature } from '../../src/protocol/tensor.js';

export interface StandInModel {
  readonly signature: ModelSignature;
  readonly sloMs?: number;
  /** 'ok': answers after REPLY_MS; 'fail': 503; 'hang': answers after HANG_MS. */
  readonly behaviour: 'ok' | 'fail' | 'hang';
}

export const REPLY_MS = 3;
export const HANG_MS = 1500;
export const FAILURE = 'worker w1 failed: its agent a1 disconnected';

export const MODELS: Record<string, StandInModel> = {
  resnet50: { signature: modelSignature(4 * 3 * 224 * 224, 4000), sloMs: 80, behaviour: 'ok' },
  tiny: {
    signature: {
      inputs: [
        { name: 'x', datatype: 'FP16', shape: [4, 8] },
        { name: 'ids', datatype: 'INT64', shape: [8] },
      ],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [10] }],
    },
    sloMs: 50,
    behaviour: 'ok',
  },
  broken: {
    signature: {
      inputs: [{ name: 'input', datatype: 'FP32', shape: [16] }],
      outputs: [{ name: 'output', datatype: 'FP32', shape: [4] }],
    },
    sloMs: 80,
    behaviour: 'fail',
  },
  slow: {
    signature: {
      inputs: [{ name: 'input', datatype: 'FP32', shape: [16] }],
      outputs: [{ name: 'output', datatype: 'FP32', shape: [4] }],
    },
    sloMs: 80,
    behaviour: 'hang',
  },
  noslo: {
    signature: {
      inputs: [{ name: 'input', datatype: 'FP32', shape: [16] }],
      outputs: [{ name: 'output', datatype: 'FP32', shape: [4] }],
    },
    behaviour: 'ok',
  },
};

/** What the stand-in saw, per model. */
export interface Seen {
  binary: number;
  json: number;
  /** Requests the codec or the binary checks refused, with why (answered 400). */
  malformed: string[];
  /** The first input tensors received per encoding (to compare the two). */
  firstInputs: Partial<Record<'binary' | 'json', Buffer[]>>;
  /** The encoding of each accepted request's first input (FP32, UINT8, JPEG, PNG), and the first such input's bytes. */
  encodings: Set<string>;
}

export const seen = new Map<string, Seen>();
export const seenOf = (name: string): Seen => {
  let s = seen.get(name);
  if (!s) seen.set(name, (s = { binary: 0, json: 0, malformed: [], firstInputs: {}, encodings: new Set() }));
  return s;
};
export const infers = (): number => [...seen.values()].reduce((a, s) => a + s.binary + s.json + s.malformed.length, 0);

/** The binary extension by hand: the header is exactly H bytes of JSON and the sizes add up to the rest. */
export function checkBinaryFraming(body: Buffer, headerLength: string): string | undefined {
  const h = Number(headerLength);
  if (!Number.isInteger(h) || h <= 0 || h > body.length) return `bad Inference-Header-Content-Length ${headerLength}`;
  let header: { inputs?: { parameters?: { binary_data_size?: number } }[] };
  try {
    header = JSON.parse(body.subarray(0, h).toString('utf8')) as typeof header;
  } catch {
    return 'the first H bytes are not JSON';
  }
  const sizes = (header.inputs ?? []).reduce((a, i) => a + (i.parameters?.binary_data_size ?? 0), 0);
  return sizes === body.length - h
    ? undefined
    : `binary_data_size add up to ${sizes}, ${body.length - h} bytes follow the header`;
}

export function reply(
  res: http.ServerResponse,
  status: number,
  body: Buffer,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): void {
  res.writeHead(status, { ...headers, 'content-length': String(body.length) });
  res.end(body);
}

export function handle(req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): void {
  const m = /^\/v2\/models\/([^/]+)(\/infer)?$/.exec(req.url ?? '');
  const name = m ? decodeURIComponent(m[1]!) : '';
  const model = MODELS[name];
  if (!m || !model) return reply(res, 404, errorBody(`unknown model '${name}'`));
  if (!m[2]) {
    if (req.method !== 'GET') return reply(res, 405, errorBody('GET only'));
    const meta = modelMetadata({ name, signature: model.signature, sloMs: model.sloMs ?? 0 }) as {
      parameters?: unknown;
    };
    if (model.sloMs === undefined) delete meta.parameters;
    return reply(res, 200, Buffer.from(JSON.stringify(meta)));
  }
  const s = seenOf(name);
  const headerLength = req.headers['inference-header-content-length'];
  const encoding = typeof headerLength === 'string' ? 'binary' : 'json';
  const framing = encoding === 'binary' ? checkBinaryFraming(body, headerLength as string) : undefined;
  const parsed = parseInferRequest(
    body,
    { inferenceHeaderLength: typeof headerLength === 'string' ? headerLength : undefined },
    { name, signature: model.signature },
  );
  if (framing !== undefined || !parsed.ok) {
    s.malformed.push(framing ?? (parsed.ok ? '' : parsed.error));
    return reply(res, 400, errorBody(framing ?? (parsed.ok ? '' : parsed.error)));
  }
  s[encoding]++;
  s.firstInputs[encoding] ??= parsed.request.inputs.map((i) => i.data);
  s.encodings.add(parsed.request.inputs[0]!.encoding);
  const answer = (): void => {
    if (model.behaviour === 'fail') return reply(res, 503, errorBody(FAILURE));
    const wanted = new Map(parsed.request.outputs.map((o) => [o.name, o.binary]));
    const outputs = model.signature.outputs.map((o) => ({
      name: o.name,
      datatype: o.datatype,
      shape: [1, ...o.shape],
      data: Buffer.alloc(4 * o.shape.reduce((a, b) => a * b, 1)),
      binary: wanted.get(o.name) ?? false,
    }));
    const r = encodeInferResponse({ modelName: name, modelVersion: '1', outputs });
    reply(res, 200, r.body, r.headers);
  };
  setTimeout(answer, model.behaviour === 'hang' ? HANG_MS : REPLY_MS);
}
