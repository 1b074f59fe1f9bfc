import { defineConfig } from 'vitest/config';

/**
 * Tests that start the whole system (`inss up`, `inss scheduler` + `inss agent`, a browser). `npm test`
 * runs every other test first (vitest.main.config.ts) and these last, one file at a time
 * (`npm run test:system`, vitest.system.config.ts). The one list of them. This default config runs
 * any test file named on the command line (`npx vitest run test/integration/chaos.test.ts`).
 */
export const SYSTEM_TEST_FILES = [
  'test/integration/system.test.ts',
  'test/integration/restart.test.ts',
  'test/e2e/up.test.ts',
  'test/e2e/up-torch.test.ts',
  'test/integration/gpu-agent.test.ts',
  'test/integration/agent-reconnect.test.ts',
  'test/e2e/triton.test.ts',
  'test/integration/grpc.test.ts',
  'test/e2e/dashboard.test.ts',
  'test/integration/hostile.test.ts',
  'test/integration/access.test.ts',
  'test/integration/chaos.test.ts',
  'test/integration/front-doors.test.ts',
  'test/integration/netns-cluster.test.ts',
  'test/integration/netns-faults.test.ts',
  'test/integration/netns-doors.test.ts',
  'test/e2e/repository-up.test.ts',
  'test/e2e/text-model-up.test.ts',
  'test/e2e/pipeline-up.test.ts',
  'test/e2e/profile-measure.test.ts',
];

/**
 * Limits far above what any test takes on an idle 2-core machine (the slowest unit/e2e test ~20 s),
 * so a busy machine (seen: 3-4x slower) does not fail them.
 */
export const TIMEOUTS = { testTimeout: 120_000, hookTimeout: 120_000 };
/** The system tests wait on states (workers ready, swaps seen); the slowest takes ~33 s idle. */
export const SYSTEM_TIMEOUTS = { testTimeout: 240_000, hookTimeout: 240_000 };

export default defineConfig({
  test: { include: ['test/**/*.test.ts'], ...TIMEOUTS },
});
