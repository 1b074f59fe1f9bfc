// What `inss loadgen`'s two transports share (cli/loadgen.ts for HTTP and the run, cli/loadgenGrpc.ts
// for gRPC): the validated options, exit statuses, the setup error and the per-model plan each
// transport builds.
import type { ImageForm, Picture } from '../tools/loadgen/images.js';
import { formDatatype, metadataTakes, syntheticPicture } from '../tools/loadgen/images.js';
import type { Encoding, ModelMetadata } from '../tools/loadgen/request.js';
import type { RequestRecord } from '../tools/loadgen/report.js';
import { type ArrivalSpec, type ModelLoad, modelStreamSeed, STREAM_INPUT } from '../tools/loadgen/schedule.js';

/** Validated options of one run (what the flags mean, after every check). */
export interface LoadgenOptions {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:8000 (a path prefix is kept). */
  readonly url: string;
  /** http: KServe v2 over HTTP/REST; grpc: its gRPC service (--url then names the gRPC port). */
  readonly protocol: Protocol;
  /** The --model models (drawn), then the --trace models (replayed: `arrivalsMs`). */
  readonly models: readonly ModelLoad[];
  /** --trace: the file each replayed model's arrival instants came from (for the report). */
  readonly traces: ReadonlyMap<string, string>;
  readonly durationS: number;
  readonly arrival: ArrivalSpec;
  readonly seed: number;
  readonly encoding: Encoding;
  /**
   * --input: the model's own tensor (fp32), or one image as UINT8 pixels, a JPEG or a PNG
   * (tools/loadgen/images.ts).
   */
  readonly input: 'fp32' | ImageForm;
  /** SLOs from --slo; other models take their metadata's parameters.slo_ms. */
  readonly sloMs: ReadonlyMap<string, number>;
  readonly timeoutMs: number;
  /** Print the JSON report on stdout (and no progress on stderr). */
  readonly json: boolean;
  readonly out?: string | undefined;
  readonly connections: number;
  /** Sent as `Authorization: Bearer <token>` on every request (a scheduler with client tokens). */
  readonly token?: string | undefined;
  /** https://: PEM certificate(s) to trust for the server (its self-signed certificate, or a private CA). */
  readonly ca?: Buffer | undefined;
}

export type Protocol = 'http' | 'grpc';

/**
 * --connections when not given: sockets for HTTP/1.1 (one per request in flight), HTTP/2 channels for gRPC
 * (each multiplexes).
 */
export const DEFAULT_CONNECTIONS: Readonly<Record<Protocol, number>> = { http: 256, grpc: 4 };

/** Exit statuses of `inss loadgen`. */
export const EXIT_OK = 0; // the run completed (whatever the servers answered: that is in the report)
export const EXIT_SETUP = 1; // the server could not be reached, does not serve a model, or --out cannot be written
export const EXIT_BAD_FLAGS = 2; // a flag is invalid, or no SLO is known for a model

/** A run that cannot start: the message says why (and names the flag when one is to blame). */
export class LoadgenSetupError extends Error {
  override readonly name = 'LoadgenSetupError';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** What became of one request, as the report records it (without its times). */
export type Sent = Pick<RequestRecord, 'outcome' | 'status' | 'error' | 'serverMs'>;

/** What is needed to send one model's requests, over either protocol. */
export interface ModelPlan {
  readonly name: string;
  readonly ratePerS: number;
  readonly sloMs: number;
  /** The bytes of each request (for the opening line). */
  readonly bytes: number;
  /** Sends one request; `done` is called exactly once, within `timeoutMs` (from this call). */
  readonly send: (timeoutMs: number, done: (s: Sent) => void) => void;
}

/** An image model's input name and its picture for --input uint8|jpeg|png, once the metadata says the form is taken. */
export function imagePicture(
  opts: Pick<LoadgenOptions, 'seed'>,
  form: ImageForm,
  name: string,
  meta: ModelMetadata,
): { input: string; picture: Picture } {
  const input = meta.inputs[0]!;
  if (meta.inputs.length !== 1 || !metadataTakes(meta.parameters, input.name, form)) {
    throw new LoadgenSetupError(
      `--input ${form}: model '${name}' does not take its input as ${formDatatype(form)} (its metadata lists ` +
        `no such form in parameters.input_forms; --input fp32 sends its own tensor)`,
      EXIT_SETUP,
    );
  }
  const side = input.shape[input.shape.length - 1]!;
  return { input: input.name, picture: syntheticPicture(side, side, modelStreamSeed(opts.seed, name, STREAM_INPUT)) };
}
