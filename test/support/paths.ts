// Paths the tests share: the repository root and ../shared beside it (CI clones with shared/ there).
import { resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
export const SHARED_DIR = resolve(REPO_ROOT, '..', 'shared');
export const V100_DATA_DIR = resolve(SHARED_DIR, 'data', 'v100');
export const INSS_BIN = resolve(REPO_ROOT, 'bin', 'inss.js');
