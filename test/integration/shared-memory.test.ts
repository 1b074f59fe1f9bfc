// The system shared-memory registry (scheduler/sharedMemory.ts) on real files: regions in a temporary
// folder standing in for /dev/shm, and one real POSIX shared-memory file in /dev/shm.
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseInferRequest } from '../../scheduler/kserve.js';
import {
  isLocalPeer,
  keyProblem,
  parseRegisterBody,
  resolveRegions,
  SharedMemoryRegistry,
} from '../../scheduler/sharedMemory.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import { bytesElement, encodeJpeg, syntheticPicture } from '../../tools/loadgen/images.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-shm-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, bytes: number): string {
  const path = join(dir, name);
  writeFileSync(path, Buffer.alloc(bytes));
  return `/${name}`;
}

describe('SharedMemoryRegistry', () => {
  it('registers, reads and writes inside the range, lists, unregisters', () => {
    const reg = new SharedMemoryRegistry(dir);
    const key = file('r1', 64);
    writeFileSync(join(dir, 'r1'), Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
    expect(reg.register('r1', key, 16, 32)).toEqual({
      ok: true,
      value: { name: 'r1', key, offset: 16, byte_size: 32 },
    });
    const got = reg.read({ name: 'r1', offset: 4, byteSize: 8 }, 'inputs[0]');
    expect(got.ok && Array.from(got.value)).toEqual([20, 21, 22, 23, 24, 25, 26, 27]);
    expect(reg.write({ name: 'r1', offset: 28, byteSize: 4 }, Buffer.from([9, 9, 9, 9]), 'output').ok).toBe(true);
    expect(Array.from(readFileSync(join(dir, 'r1')).subarray(44, 48))).toEqual([9, 9, 9, 9]);
    expect(reg.read({ name: 'r1', offset: 30, byteSize: 4 }, 'inputs[0]')).toMatchObject({
      ok: false,
      status: 400,
      error: expect.stringMatching(/runs past region 'r1' \(32 bytes\)/) as unknown,
    });
    expect(reg.read({ name: 'nope', offset: 0, byteSize: 4 }, 'inputs[0]')).toMatchObject({
      ok: false,
      error: "inputs[0]: no shared memory region 'nope' is registered",
    });
    expect(reg.status()).toEqual({ ok: true, value: [{ name: 'r1', key, offset: 16, byte_size: 32 }] });
    expect(reg.status('nope')).toMatchObject({ ok: false, status: 404 });
    expect(reg.register('r1', key, 0, 8)).toMatchObject({ ok: false, status: 409 });
    reg.unregister('r1');
    reg.unregister('never-registered'); // nothing to do, as Triton
    expect(reg.status()).toEqual({ ok: true, value: [] });
  });

  it.each([
    ['a key with a path', '/../etc/passwd', /expected a POSIX shared-memory name/],
    ['a key without its slash', 'r2', /expected a POSIX shared-memory name/],
    ['a key of ..', '/..', /expected a POSIX shared-memory name/],
    ['a missing object', '/missing', /no such shared-memory object/],
  ])('refuses %s', (_name, key, why) => {
    expect(new SharedMemoryRegistry(dir).register('x', key, 0, 4)).toMatchObject({
      ok: false,
      status: 400,
      error: expect.stringMatching(why) as unknown,
    });
  });

  it(
    'refuses a symbolic link, a folder, another owner, a range ' + 'past the end, and reports a region shrunk since',
    () => {
      const reg = new SharedMemoryRegistry(dir);
      const target = file('target', 16);
      symlinkSync(join(dir, 'target'), join(dir, 'link'));
      expect(reg.register('l', '/link', 0, 4)).toMatchObject({
        ok: false,
        error: "key '/link': it is a symbolic link",
      });
      mkdirSync(join(dir, 'folder'));
      expect(reg.register('f', '/folder', 0, 4)).toMatchObject({
        ok: false,
        error: expect.stringMatching(/is not a regular file|EISDIR/) as unknown,
      });
      expect(new SharedMemoryRegistry(dir, 12345).register('o', target, 0, 4)).toMatchObject({
        ok: false,
        error: expect.stringMatching(/belongs to another user/) as unknown,
      });
      expect(reg.register('p', target, 8, 16)).toMatchObject({
        ok: false,
        error: `key '${target}' is 16 bytes: offset 8 + byte_size 16 runs past its end`,
      });
      expect(reg.register('t', target, 0, 16).ok).toBe(true);
      truncateSync(join(dir, 'target'), 4);
      expect(reg.read({ name: 't', offset: 0, byteSize: 8 }, 'inputs[0]')).toMatchObject({
        ok: false,
        error: expect.stringMatching(/was shrunk/) as unknown,
      });
      reg.close();
    },
  );

  it('works on a real POSIX shared-memory object in /dev/shm', () => {
    const name = `inss_test_${process.pid}`;
    writeFileSync(`/dev/shm/${name}`, Buffer.from('abcdefgh'));
    try {
      const reg = new SharedMemoryRegistry();
      expect(reg.register('real', `/${name}`, 0, 8).ok).toBe(true);
      const got = reg.read({ name: 'real', offset: 2, byteSize: 3 }, 'in');
      expect(got.ok && got.value.toString()).toBe('cde');
      reg.close();
    } finally {
      rmSync(`/dev/shm/${name}`, { force: true });
    }
  });
});

describe('boundary checks', () => {
  it('parses the register body and names the field at fault', () => {
    expect(parseRegisterBody(Buffer.from('{"key":"/a","offset":0,"byte_size":8}'))).toEqual({
      ok: true,
      value: { key: '/a', offset: 0, byte_size: 8 },
    });
    expect(parseRegisterBody(Buffer.from('{"key":"/a","offset":-1,"byte_size":8}'))).toMatchObject({
      ok: false,
      error: 'register request: offset: expected >= 0',
    });
    expect(parseRegisterBody(Buffer.from('{"key":"/a","byte_size":0,"offset":0}'))).toMatchObject({
      ok: false,
      error: 'register request: byte_size: expected > 0',
    });
    expect(parseRegisterBody(Buffer.from('nope'))).toMatchObject({
      ok: false,
      error: expect.stringMatching(/malformed JSON/) as unknown,
    });
    expect(keyProblem('/inss_in')).toBeUndefined();
  });

  it('knows a local peer', () => {
    expect(['127.0.0.1', '::1', '::ffff:127.0.0.1', '127.1.2.3'].every(isLocalPeer)).toBe(true);
    expect(['10.0.0.1', '::ffff:10.0.0.1', undefined, '128.0.0.1'].some(isLocalPeer)).toBe(false);
  });
});

describe("resolveRegions (the service's step between the codec and the task)", () => {
  const IMAGE = modelSignature(4 * 3 * 224 * 224, 4000);
  const jpeg = encodeJpeg(syntheticPicture(64, 48, 4));
  const parse = (region: string, size: number) =>
    parseInferRequest(
      Buffer.from(
        JSON.stringify({
          inputs: [
            {
              name: 'input',
              datatype: 'BYTES',
              shape: [1, 1],
              parameters: { shared_memory_region: region, shared_memory_byte_size: size },
            },
          ],
          outputs: [
            {
              name: 'output',
              parameters: { shared_memory_region: region, shared_memory_byte_size: 4000, shared_memory_offset: 8192 },
            },
          ],
        }),
      ),
      {},
      { name: 'resnet50', signature: IMAGE },
    );

  it('reads an encoded image from its region and checks it as a BYTES input; refuses a client off this host', () => {
    const reg = new SharedMemoryRegistry(dir);
    const key = file('img', 16384);
    writeFileSync(join(dir, 'img'), Buffer.concat([bytesElement(jpeg), Buffer.alloc(16384 - 4 - jpeg.length)]));
    expect(reg.register('img', key, 0, 16384).ok).toBe(true);
    const parsed = parse('img', 4 + jpeg.length);
    if (!parsed.ok) throw new Error(parsed.error);
    const r = resolveRegions(reg, parsed.request, () => 4000, true);
    expect(r.ok && r.value.inputs[0]!.encoding).toBe('JPEG');
    expect(r.ok && r.value.inputs[0]!.data.equals(jpeg)).toBe(true);
    expect(resolveRegions(reg, parsed.request, () => 4000, false)).toMatchObject({ ok: false, status: 403 });
    // The same range holding no image: the header check answers as for binary data.
    writeFileSync(
      join(dir, 'img'),
      Buffer.concat([bytesElement(Buffer.alloc(jpeg.length, 7)), Buffer.alloc(16384 - 4 - jpeg.length)]),
    );
    expect(resolveRegions(reg, parsed.request, () => 4000, true)).toMatchObject({
      ok: false,
      status: 400,
      error: expect.stringMatching(/^inputs\[0\] \('input'\): not a JPEG or PNG image/) as unknown,
    });
    // An output that does not fit where the request says.
    const small = new SharedMemoryRegistry(dir);
    expect(small.register('img', key, 0, 9000).ok).toBe(true);
    writeFileSync(join(dir, 'img'), Buffer.concat([bytesElement(jpeg), Buffer.alloc(16384 - 4 - jpeg.length)]));
    expect(resolveRegions(small, parsed.request, () => 4000, true)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/output 'output': 4000 bytes do not fit at offset 8192/) as unknown,
    });
    reg.close();
    small.close();
  });
});
