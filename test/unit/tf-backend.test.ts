// The default TensorFlow.js backend works on a machine with no native TensorFlow installed.
import { describe, expect, it } from 'vitest';
import { initTf } from '../../rl/backend.js';

describe('initTf', () => {
  it('falls back to the wasm backend and computes with it', async () => {
    const { tf, backend, notes } = await initTf();
    expect(['wasm', 'tensorflow']).toContain(backend);
    if (backend === 'wasm') expect(notes.join(' ')).toMatch(/tfjs-node/);
    const y = tf.tidy(() =>
      tf
        .matMul(
          tf.tensor2d([
            [1, 2],
            [3, 4],
          ]),
          tf.tensor2d([[5], [6]]),
        )
        .dataSync(),
    );
    expect(Array.from(y)).toEqual([17, 39]);
    expect(await initTf()).toMatchObject({ backend }); // idempotent
  });
});
