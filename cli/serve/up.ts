// `inss up`: the scheduler and a local agent in one process, on this machine's GPUs when it has them and
// the PyTorch worker is asked for, else on the scenario's cluster, simulated. The agent takes the same
// --model-repository as the scheduler.
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import type { AgentFlags, ServeOptions } from './options.js';
import { addSchedulerOptions, DATA_PATH_OPTION, parseSimulate, POOLED_GPU_OPTION, WORKER_OPTION } from './options.js';
import { discoveredGpus, startAgent } from './agent.js';
import { positiveInt } from '../flags.js';
import { grpcShown, makeLogger, untilSignal } from './process.js';
import { startScheduler } from './scheduler.js';

export function registerUpCommand(program: Command): void {
  addSchedulerOptions(
    program
      .command('up')
      .description(
        'Start everything on this machine: the scheduler and a local agent (simulated GPUs where there are none)',
      )
      .option('--simulate <profile:count,...>', "simulated GPUs (default: the scenario's cluster)", parseSimulate)
      .addOption(WORKER_OPTION())
      .option('--zero-time', 'simulated workers answer at once (system-overhead benchmark)')
      .option('--seed <n>', 'seed of the simulated GPUs', positiveInt, 1)
      .addOption(POOLED_GPU_OPTION("the scenario's timeshareGpu"))
      .addOption(DATA_PATH_OPTION()),
  ).action(async (opts: ServeOptions & AgentFlags & { host: string; port: number }, command: Command) => {
    const logger = makeLogger(opts.logLevel);
    const token = randomBytes(16).toString('hex');
    const scenarioGiven = command.getOptionValueSource('scenario') !== 'default';
    const { service, store, config, tls } = await startScheduler(
      { ...opts, command: 'up', scenarioGiven, token },
      logger,
    );
    // The machine's GPUs when it has some and the PyTorch worker is asked for; else the scenario's
    // cluster, simulated (with --model-repository alone, the default scenario's).
    let simulate = opts.simulate;
    if (!simulate) {
      const found = await discoveredGpus();
      const real = 'gpus' in found && opts.worker === 'torch';
      if ('gpus' in found && !real)
        logger.warn(
          { gpus: found.gpus.map((g) => g.name) },
          'this machine has GPUs; serving simulated GPUs because the worker is sim (use --worker torch for the ' +
            'real ones)',
        );
      const sc = config.scenario.scenario;
      if (!real)
        simulate = sc.gpus.map((g) => ({
          profile: g.profile,
          count: g.count,
          pooled: opts.pooledGpu ?? g.timeshareGpu ?? sc.timeshareGpu,
        }));
    }
    // Over TLS the local agent trusts exactly the certificate its scheduler serves, whatever names it carries.
    const agentTls = tls ? { tls: { ca: tls.cert, checkServerIdentity: () => undefined } } : {};
    // The local agent's workers are on this host: over TCP (`--data-path tcp`) the scheduler reaches them on loopback.
    const dataAdvertise = opts.dataPath === 'tcp' ? { dataAdvertise: '127.0.0.1' } : {};
    const agent = await startAgent(
      service.agentUrl,
      token,
      { ...opts, ...(simulate ? { simulate } : {}), ...agentTls, ...dataAdvertise, agentId: opts.agentId ?? 'local' },
      logger.child({ part: 'agent' }),
    );
    console.log(
      `inss up: endpoint ${service.url}/v2  ${grpcShown(service)}(models: ` +
        `${[...config.models, ...config.pipelines.map((p) => p.endpoint)].map((m) => m.name).join(', ')}; ` +
        `policy ${opts.policy})`,
    );
    console.log(`inss up: agents ${service.agentUrl}  token ${token}`);
    console.log(`inss up: try  curl ${service.url}/v2/health/ready`);
    await untilSignal(async () => {
      await agent.stop();
      await service.close();
      store.close();
    });
  });
}
