// Self-signed certificates for the TLS tests and the cluster bench (benchmarks/cluster.ts), made by openssl
// as docs/tls.md's recipe does; the tests that need one skip where openssl is absent.
import { execFileSync } from 'node:child_process';

/** Whether an `openssl` the tests can run is on the PATH. */
export function opensslWorks(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes a self-signed P-256 certificate valid for 2 days to `cert` and its key to `key`, for the subject
 * `cn` and the subject alternative names `san` (openssl's form: "DNS:localhost,IP:127.0.0.1").
 */
export function selfSignedCert(key: string, cert: string, cn = 'localhost', san = 'DNS:localhost,IP:127.0.0.1'): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      `subjectAltName=${san}`,
    ],
    { stdio: 'ignore' },
  );
}
