// `npm test`'s first run: every test but the system tests (SYSTEM_TEST_FILES in vitest.config.ts).
import { configDefaults, defineConfig } from 'vitest/config';
import { SYSTEM_TEST_FILES, TIMEOUTS } from './vitest.config.js';

export default defineConfig({
  test: { include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SYSTEM_TEST_FILES], ...TIMEOUTS },
});
