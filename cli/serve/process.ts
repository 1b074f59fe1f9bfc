// The serving commands' process: its logger (pino on stderr), the endpoint line, and the wait for a signal.
import { pino, type Logger } from 'pino';
import type { SchedulerService } from '../../scheduler/service.js';

export function makeLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid } }, pino.destination({ dest: 2, sync: false }));
}

/** The gRPC address for the printed endpoint line ('' when off). */
export function grpcShown(service: SchedulerService): string {
  return service.grpcAddress ? `grpc ${service.grpcAddress}  ` : '';
}

/** Resolves when SIGINT or SIGTERM arrives, after running `stop` once. */
export function untilSignal(stop: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (sig: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`inss: ${sig}: shutting down\n`);
      void stop().then(resolve, (e: unknown) => {
        process.stderr.write(`inss: shutdown failed: ${String(e)}\n`);
        resolve();
      });
    };
    // `on`, not `once`: execa's cleanup hook (signal-exit) re-raises a signal that has no other listener left.
    process.on('SIGINT', () => onSignal('SIGINT'));
    process.on('SIGTERM', () => onSignal('SIGTERM'));
  });
}
