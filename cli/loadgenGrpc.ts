// `inss loadgen --protocol grpc`: the same load as over HTTP, as ModelInfer calls on the KServe v2 /
// Open Inference Protocol's gRPC service (Triton's inference.GRPCInferenceService, proto/). This is the
// shell: channels, metadata calls and the infer calls; what is sent and how an answer is judged are
// pure (tools/loadgen/grpcRequest.ts). cli/loadgen.ts runs the schedule and the report.
//
// --connections channels, each its own HTTP/2 connection (a local subchannel pool: grpc-js would share
// one connection between channels to the same address), taken in turn; on each, the calls in flight
// are multiplexed as streams. A call's deadline is --timeout from its send.
import * as grpc from '@grpc/grpc-js';
import { inferenceService } from '../scheduler/grpcProto.js';
import {
  grpcCodeName,
  grpcImageRequest,
  type GrpcInferRequest,
  grpcInferRequest,
  grpcModelMetadata,
  grpcRequestBytes,
  judgeGrpcAnswer,
} from '../tools/loadgen/grpcRequest.js';
import {
  metadataSloMs,
  parseModelMetadata,
  randomInputs,
  requestInputs,
  serverTimingMs,
} from '../tools/loadgen/request.js';
import { type ModelLoad, modelStreamSeed, STREAM_INPUT } from '../tools/loadgen/schedule.js';
import { Rng } from '../src/workload/random.js';
import {
  EXIT_BAD_FLAGS,
  EXIT_SETUP,
  imagePicture,
  type LoadgenOptions,
  LoadgenSetupError,
  type ModelPlan,
  type Sent,
} from './loadgenPlan.js';

type Callback = (err: grpc.ServiceError | null, value?: unknown) => void;
type Method = (
  req: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: Callback,
) => grpc.ClientUnaryCall;

export class GrpcTarget {
  private readonly clients: grpc.Client[];
  private readonly metadata = new grpc.Metadata();
  private next = 0;

  constructor(private readonly opts: LoadgenOptions) {
    const u = new URL(opts.url);
    if (u.pathname !== '' && u.pathname !== '/')
      throw new LoadgenSetupError(`--url ${opts.url}: a gRPC server is a host and port (no path)`, EXIT_BAD_FLAGS);
    const host = u.hostname.includes(':') && !u.hostname.startsWith('[') ? `[${u.hostname}]` : u.hostname;
    const address = `${host}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
    const creds =
      u.protocol === 'https:' ? grpc.credentials.createSsl(opts.ca ?? null) : grpc.credentials.createInsecure();
    const Service = inferenceService();
    const options = { 'grpc.max_receive_message_length': -1, 'grpc.use_local_subchannel_pool': 1 };
    this.clients = Array.from({ length: opts.connections }, () => new Service(address, creds, options));
    if (opts.token !== undefined) this.metadata.set('authorization', `Bearer ${opts.token}`);
  }

  private method(client: grpc.Client, name: string): Method {
    return (client as unknown as Record<string, Method>)[name]!.bind(client);
  }

  /** One call of the metadata RPCs: the answer, or its status. */
  private unary(
    name: string,
    req: unknown,
  ): Promise<{ ok: true; value: unknown } | { ok: false; code: number; details: string }> {
    return new Promise((resolve) => {
      this.method(this.clients[0]!, name)(
        req,
        this.metadata,
        { deadline: Date.now() + this.opts.timeoutMs },
        (err, value) => resolve(err ? { ok: false, code: err.code, details: err.details } : { ok: true, value }),
      );
    });
  }

  /** A model's metadata and configuration, and its one request (seeded by --seed and the name). */
  async plan(m: ModelLoad): Promise<ModelPlan> {
    const opts = this.opts;
    const meta = await this.unary('ModelMetadata', { name: m.name });
    if (!meta.ok) {
      if (meta.code === (grpc.status.NOT_FOUND as number))
        throw new LoadgenSetupError(
          `--model ${m.name}: the server at ${opts.url} does not serve this model (gRPC NOT_FOUND: ${meta.details})`,
          EXIT_SETUP,
        );
      if (meta.code === (grpc.status.UNAVAILABLE as number) || meta.code === (grpc.status.DEADLINE_EXCEEDED as number))
        throw new LoadgenSetupError(
          `cannot reach the gRPC server at --url ${opts.url} (ModelMetadata): ${grpcCodeName(meta.code)}: ` +
            `${meta.details}`,
          EXIT_SETUP,
        );
      throw new LoadgenSetupError(
        `--model ${m.name}: ModelMetadata answered gRPC ${grpcCodeName(meta.code)}: ${meta.details}`,
        EXIT_SETUP,
      );
    }
    // inss's SLO and input forms are in the configuration's parameters; another server may not have one.
    const config = await this.unary('ModelConfig', { name: m.name });
    const parsed = parseModelMetadata(
      grpcModelMetadata(
        meta.value as Parameters<typeof grpcModelMetadata>[0],
        config.ok ? (config.value as Parameters<typeof grpcModelMetadata>[1]) : undefined,
      ),
    );
    if (!parsed.ok) throw new LoadgenSetupError(`--model ${m.name}: ${parsed.error}`, EXIT_SETUP);
    const specs = requestInputs(parsed.value);
    if (!specs.ok) throw new LoadgenSetupError(`--model ${m.name}: ${specs.error}`, EXIT_SETUP);
    const sloMs = opts.sloMs.get(m.name) ?? metadataSloMs(parsed.value);
    if (sloMs === undefined)
      throw new LoadgenSetupError(
        `--slo: no SLO for model '${m.name}': its configuration has no parameters.slo_ms; give --slo ${m.name}=<ms>`,
        EXIT_BAD_FLAGS,
      );
    let request: GrpcInferRequest;
    if (opts.input === 'fp32')
      request = grpcInferRequest(
        m.name,
        randomInputs(specs.value, new Rng(modelStreamSeed(opts.seed, m.name, STREAM_INPUT))),
        opts.encoding,
      );
    else {
      const { input, picture } = imagePicture(opts, opts.input, m.name, parsed.value);
      request = grpcImageRequest(m.name, input, opts.input, picture, opts.encoding);
    }
    return {
      name: m.name,
      ratePerS: m.ratePerS,
      sloMs,
      bytes: grpcRequestBytes(request),
      send: (timeoutMs, done) => this.infer(request, timeoutMs, done),
    };
  }

  /**
   * One ModelInfer call on the next channel; `done` once its status arrived (with the server's span from its
   * trailer).
   */
  private infer(request: GrpcInferRequest, timeoutMs: number, done: (s: Sent) => void): void {
    const client = this.clients[this.next++ % this.clients.length]!;
    let answer: Parameters<typeof judgeGrpcAnswer>[0] | undefined;
    const call = this.method(client, 'ModelInfer')(
      request,
      this.metadata,
      { deadline: Date.now() + timeoutMs },
      (err, value) => {
        answer = err
          ? { ok: false, code: err.code, details: err.details }
          : { ok: true, response: value as { outputs: []; raw_output_contents: Buffer[] } };
      },
    );
    // grpc-js calls the callback, then emits the status (with the trailer).
    call.on('status', (status: grpc.StatusObject) => {
      const j = judgeGrpcAnswer(answer ?? { ok: false, code: status.code, details: status.details });
      if (j.outcome !== 'ok') return done({ outcome: j.outcome, error: j.error });
      const timing = status.metadata.get('server-timing')[0];
      const serverMs = serverTimingMs(typeof timing === 'string' ? timing : undefined);
      done({ outcome: 'ok', ...(serverMs !== undefined ? { serverMs } : {}) });
    });
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}
