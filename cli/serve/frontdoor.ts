// `inss frontdoor`: a front door (docs/front-doors.md): the scheduler's task endpoints (KServe v2 HTTP and gRPC,
// Triton's extensions, /metrics) for the same models, with its own queues and dispatch over the workers the
// scheduler's tables give it, its own data links to them, and requests for models it holds no worker of
// forwarded to a door that holds one. It takes the scheduler's model flags (the same --scenario and
// --model-repository: the requests it parses are the same models'), keeps no state and runs no policy.
import { hostname } from 'node:os';
import { type Command, Option } from 'commander';
import { LinkClient } from '../../agent/linkClient.js';
import { InvalidInputError } from '../../src/profile/schema.js';
import { ToDoorSchema } from '../../src/protocol/door.js';
import { readFlagFile, sharedToken } from './access.js';
import { addSchedulerOptions, hubUrl, type ServeOptions } from './options.js';
import { grpcShown, makeLogger, untilSignal } from './process.js';
import { startScheduler } from './scheduler.js';

interface FrontDoorFlags extends ServeOptions {
  host: string;
  port: number;
  scheduler: string;
  token?: string;
  tokenFile?: string;
  ca?: string;
  doorId?: string;
  advertise?: string;
}

function advertiseUrl(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new InvalidInputError(`--advertise: '${v}' is not a URL (e.g. http://10.0.0.6:8000)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new InvalidInputError(`--advertise: '${v}' must start with http:// or https://`);
  return u.origin;
}

export function registerFrontDoorCommand(program: Command): void {
  addSchedulerOptions(
    program
      .command('frontdoor')
      .description("Run a front door: the scheduler's task endpoints, its own queues over the workers it is given")
      .requiredOption('--scheduler <url>', "the scheduler's door hub, ws://HOST:PORT (path /doors)", (v) =>
        hubUrl(v, '/doors'),
      )
      .addOption(
        new Option(
          '--token <token>',
          "the scheduler's agent token, or this door's own (prefer INSS_TOKEN or --token-file)",
        ).env('INSS_TOKEN'),
      )
      .option('--token-file <file>', 'the token, from a file')
      .option('--ca <file>', 'wss://: PEM certificate(s) to trust for the scheduler and for https:// peer doors')
      .option('--door-id <id>', 'stable id of this door (default: the host name and port)')
      .option('--advertise <url>', "the URL peer doors forward requests to (default: this door's own URL)"),
  ).action(async (opts: FrontDoorFlags, command: Command) => {
    const logger = makeLogger(opts.logLevel);
    const token = sharedToken(opts);
    if (token === undefined) throw new InvalidInputError('no token: set INSS_TOKEN, or give --token-file (or --token)');
    if (opts.ca !== undefined && !opts.scheduler.startsWith('wss:'))
      throw new InvalidInputError('--ca: only for a wss:// scheduler URL');
    const tls = opts.ca !== undefined ? { ca: readFlagFile('--ca', opts.ca) } : undefined;
    const { service, store } = await startScheduler(
      {
        ...opts,
        command: 'frontdoor',
        scenarioGiven: command.getOptionValueSource('scenario') !== 'default',
        token: null,
        frontDoor: {
          doorId: opts.doorId ?? `${hostname()}:${opts.port === 0 ? `pid${process.pid}` : opts.port}`,
          connect: (hello, message) => {
            const log = logger.child({ part: 'door' });
            const schema = ToDoorSchema;
            const link = new LinkClient({
              url: opts.scheduler,
              token,
              ...(tls ? { tls } : {}),
              log,
              schema,
              hello,
              message,
            });
            return link;
          },
          ...(tls ? { ca: tls.ca } : {}),
        },
        ...(opts.advertise !== undefined ? { advertiseUrl: advertiseUrl(opts.advertise) } : {}),
      },
      logger,
    );
    console.log(`inss frontdoor: endpoint ${service.url}/v2  ${grpcShown(service)}scheduler ${opts.scheduler}`);
    await untilSignal(async () => {
      await service.close();
      store.close();
    });
  });
}
