// `--grpc-port` and `--no-grpc` of `inss up` and `inss scheduler` (cli/serve.ts grpcPortOf), and the
// peer addresses the gRPC server reads to tell a client on this host (scheduler/grpc.ts peerAddress).
import { describe, expect, it } from 'vitest';
import { grpcPortOf } from '../../cli/serve.js';
import { peerAddress } from '../../scheduler/grpc.js';
import { isLocalPeer } from '../../scheduler/sharedMemory.js';
import { InvalidInputError } from '../../src/profile/schema.js';

describe('grpcPortOf', () => {
  it.each([
    ['the HTTP port + 1 by default (8001 beside 8000, as Triton)', { grpc: true, port: 8000 }, 8001],
    ['any free port when the HTTP port is', { grpc: true, port: 0 }, 0],
    ['--grpc-port as given', { grpc: true, port: 8000, grpcPort: 9001 }, 9001],
    ['--grpc-port 0 beside a fixed HTTP port', { grpc: true, port: 8000, grpcPort: 0 }, 0],
    ['none with --no-grpc', { grpc: false, port: 8000, grpcPort: 9001 }, undefined],
  ])('%s', (_what, opts, port) => {
    expect(grpcPortOf(opts)).toBe(port);
  });

  it('--port 65535 leaves no next port: the error says to give --grpc-port', () => {
    expect(() => grpcPortOf({ grpc: true, port: 65535 })).toThrow(InvalidInputError);
    expect(() => grpcPortOf({ grpc: true, port: 65535 })).toThrow(/give --grpc-port/);
  });
});

describe('peerAddress', () => {
  it.each([
    ['127.0.0.1:5000', '127.0.0.1', true],
    ['ipv4:127.0.0.1:5000', '127.0.0.1', true],
    ['[::1]:5000', '::1', true],
    ['ipv6:[::ffff:127.0.0.1]:5000', '::ffff:127.0.0.1', true],
    ['10.0.0.5:41000', '10.0.0.5', false],
    ['[2001:db8::1]:41000', '2001:db8::1', false],
  ])('%s is %s (local: %s)', (peer, address, local) => {
    expect(peerAddress(peer)).toBe(address);
    expect(isLocalPeer(peerAddress(peer))).toBe(local);
  });
});
