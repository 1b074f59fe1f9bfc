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
  'test/e2e/dashboard.test.ts',
  'test/integration/hostile.test.ts',
  'test/integration/access.test.ts',
  'test/integration/chaos.test.ts',
];

export const TIMEOUTS = { testTimeout: 60_000, hookTimeout: 60_000 };

export default defineConfig({
  test: { include: ['test/**/*.test.ts'], ...TIMEOUTS },
});
