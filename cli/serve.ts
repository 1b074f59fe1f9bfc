// `inss scheduler`, `inss agent`, `inss frontdoor` and `inss up`: the running system's composition root. It loads
// profiles, scenarios and policy files (the one place that reads them), builds the scheduler service
// and the agent, and handles signals. One module per command under cli/serve/, their flags in
// cli/serve/options.ts.
import type { Command } from 'commander';
import { registerAgentCommand } from './serve/agent.js';
import { registerFrontDoorCommand } from './serve/frontdoor.js';
import { registerSchedulerCommand } from './serve/scheduler.js';
import { registerUpCommand } from './serve/up.js';

export { grpcPortOf } from './serve/options.js';

export function registerServe(program: Command): void {
  registerSchedulerCommand(program);
  registerAgentCommand(program);
  registerFrontDoorCommand(program);
  registerUpCommand(program);
}
