// The system tests (SYSTEM_TEST_FILES in vitest.config.ts), one file at a time: each starts real
// processes and ports, and they would only compete for the machine's cores in parallel.
import { defineConfig } from 'vitest/config';
import { SYSTEM_TEST_FILES, SYSTEM_TIMEOUTS } from './vitest.config.js';

export default defineConfig({
  test: { include: SYSTEM_TEST_FILES, fileParallelism: false, ...SYSTEM_TIMEOUTS },
});
