// Dependency direction: src/ is the pure core that the scheduler and the simulator run and
// imports nothing of ours outside it; tools/ is offline tooling (fitting, loadgen, bench, SVG reports),
// pure too, on src/ only, and nothing in src/ imports it;
// rl/ builds on src/; scheduler/ on src/ alone; agent/ on src/; native/ on src/ and agent/;
// cli/ is the one composition root that may import everything. `npm test` runs this check.
// Within src/, the serving rules (src/serving/) are what the twin and the running system share; the
// simulator (src/sim/) is the twin's own event loop and physics, which the running system never runs.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'core-is-pure',
      comment: 'src/ must not import tools/, rl/, scheduler/, agent/, native/ or cli/',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(tools|rl|scheduler|agent|native|cli)/' },
    },
    {
      name: 'tools-direction',
      comment: 'tools/ (offline tooling) builds on src/ only',
      severity: 'error',
      from: { path: '^tools/' },
      to: { path: '^(rl|scheduler|agent|native|cli)/' },
    },
    {
      name: 'core-has-no-effects',
      comment: 'src/ and tools/ are pure: no sockets, processes, files or clocks',
      severity: 'error',
      from: { path: '^(src|tools)/' },
      to: {
        dependencyTypes: ['core'],
        path: '^(node:)?(fs|fs/promises|net|http|https|child_process|dgram|cluster|worker_threads)$',
      },
    },
    { name: 'rl-direction', severity: 'error', from: { path: '^rl/' }, to: { path: '^(scheduler|agent|native|cli)/' } },
    {
      name: 'scheduler-direction',
      comment:
        'the scheduler builds on src/ alone: the policy registry (and with it rl/ and TensorFlow.js) is ' +
        "the composition root's (cli/registry.ts), which hands the scheduler a policy factory",
      severity: 'error',
      from: { path: '^scheduler/' },
      to: { path: '^(rl|agent|native|cli)/' },
    },
    {
      name: 'agent-direction',
      severity: 'error',
      from: { path: '^agent/' },
      to: { path: '^(rl|scheduler|native|cli)/' },
    },
    { name: 'native-direction', severity: 'error', from: { path: '^native/' }, to: { path: '^(rl|scheduler|cli)/' } },
    {
      name: 'scheduler-not-on-simulator',
      comment:
        'the scheduler follows the serving rules (src/serving/) that the simulator follows too; it never ' +
        "imports the simulator's event loop or ground truth (src/sim/), so the twin cannot leak into the system",
      severity: 'error',
      from: { path: '^scheduler/' },
      to: { path: '^src/sim/' },
    },
    {
      name: 'rl-not-on-simulator',
      comment:
        'the planner trains on the latency model (rl/env.ts); the twin that judges its checkpoints is ' +
        'handed in by the CLI, so rl/ never imports src/sim/',
      severity: 'error',
      from: { path: '^rl/' },
      to: { path: '^src/sim/' },
    },
    {
      name: 'agent-on-ground-truth-only',
      comment:
        "the simulated GPU worker (agent/simWorker.ts) times batches by the twin's ground truth, so both " +
        'draw the same times; that is the one part of src/sim/ the agent may import',
      severity: 'error',
      from: { path: '^agent/' },
      to: { path: '^src/sim/', pathNot: '^src/sim/groundTruth\\.ts$' },
    },
    { name: 'tests-not-imported', severity: 'error', from: { pathNot: '^test/' }, to: { path: '^test/' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js'],
    },
  },
};
