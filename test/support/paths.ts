// Paths the tests share: the repository root and the measurement data the project carries (data/).
import { resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
export const DATA_DIR = resolve(REPO_ROOT, 'data');
export const V100_DATA_DIR = resolve(DATA_DIR, 'v100');
export const PAPER_CLUSTER_DATA_DIR = resolve(DATA_DIR, 'paper-cluster');
export const INSS_BIN = resolve(REPO_ROOT, 'bin', 'inss.js');
