// Dependency direction (STYLE.md): src/ is the pure core that the scheduler and the simulator run and
// imports nothing of ours outside it; tools/ is offline tooling (fitting, loadgen, bench, SVG reports),
// pure too, on src/ only, and nothing in src/ imports it;
// rl/ builds on src/; scheduler/ on src/ and rl/; agent/ on src/; native/ on src/ and agent/;
// cli/ is the one composition root that may import everything. `npm test` runs this check.
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
      severity: 'error',
      from: { path: '^scheduler/' },
      to: { path: '^(agent|native|cli)/' },
    },
    {
      name: 'agent-direction',
      severity: 'error',
      from: { path: '^agent/' },
      to: { path: '^(rl|scheduler|native|cli)/' },
    },
    { name: 'native-direction', severity: 'error', from: { path: '^native/' }, to: { path: '^(rl|scheduler|cli)/' } },
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
