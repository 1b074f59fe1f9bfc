// TensorFlow.js backend selection (../shared/NOTES-tfjs.md). A native backend is used when the user's
// machine has one installed (`@tensorflow/tfjs-node-gpu`, then `@tensorflow/tfjs-node`); otherwise
// the WebAssembly backend with SIMD, whose .wasm files ship inside its npm package. Native backends
// are optional and never installed by `npm ci`: their install scripts download libtensorflow.
//
// Call `initTf()` once, before any tensor or variable exists (tf.setBackend must finish first).
import * as tf from '@tensorflow/tfjs';

export type BackendName = 'tensorflow' | 'wasm' | 'cpu';

export interface TfInit {
  readonly tf: typeof tf;
  readonly backend: BackendName;
  /** Why a preferred backend was not used, for the log. */
  readonly notes: readonly string[];
}

const NATIVE_PACKAGES = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'] as const;

let initialised: Promise<TfInit> | null = null;

/**
 * Picks and initialises the backend. `prefer` forces one: `wasm` or `cpu` skip the native probe;
 * `tensorflow` fails if no native package loads. Idempotent: later calls get the first result.
 */
export function initTf(prefer?: BackendName): Promise<TfInit> {
  initialised ??= pick(prefer);
  return initialised;
}

async function pick(prefer?: BackendName): Promise<TfInit> {
  const notes: string[] = [];
  if (prefer === undefined || prefer === 'tensorflow') {
    for (const pkg of NATIVE_PACKAGES) {
      try {
        await import(pkg); // registers the 'tensorflow' backend with the shared tfjs-core
        if (await tf.setBackend('tensorflow')) return { tf, backend: 'tensorflow', notes };
        notes.push(`${pkg} loaded but its backend did not initialise`);
      } catch (err) {
        notes.push(`${pkg} not available (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      }
    }
    if (prefer === 'tensorflow') throw new Error(`no native TensorFlow backend: ${notes.join('; ')}`);
  }
  if (prefer !== 'cpu') {
    await import('@tensorflow/tfjs-backend-wasm');
    if (await tf.setBackend('wasm')) {
      await tf.ready();
      return { tf, backend: 'wasm', notes };
    }
    notes.push('wasm backend did not initialise');
  }
  await tf.setBackend('cpu');
  await tf.ready();
  return { tf, backend: 'cpu', notes };
}
