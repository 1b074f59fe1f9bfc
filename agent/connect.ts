// How an agent connects to the scheduler: why a connection failed, in words an operator can
// act on, and the TLS settings of a wss:// connection.
// Contract: every failed connection or upgrade is retried by the agent with backoff; this module only
// names the reason and how loudly to say it. A refusal of the token is an error (the operator must fix a
// credential; the agent keeps trying so it joins once the scheduler accepts it); anything else is a
// warning (a scheduler restarting, a proxy in front of it not ready yet).

export interface UpgradeRefusal {
  readonly level: 'error' | 'warn';
  readonly reason: string;
}

/** The reason for a non-101 answer to the agent's WebSocket upgrade, by HTTP status code. */
export function upgradeRefusal(statusCode: number | undefined): UpgradeRefusal {
  if (statusCode === 401 || statusCode === 403) {
    return {
      level: 'error',
      reason:
        `the scheduler refused the token (HTTP ${statusCode}): check the agent's token against the ` +
        `scheduler's; retrying`,
    };
  }
  if (statusCode === 404)
    return { level: 'warn', reason: 'no agent hub at this URL (HTTP 404): check --scheduler; retrying' };
  if (statusCode !== undefined && statusCode >= 500)
    return { level: 'warn', reason: `the scheduler or a proxy failed the upgrade (HTTP ${statusCode}); retrying` };
  return { level: 'warn', reason: `the scheduler refused the connection (HTTP ${statusCode ?? 'unknown'}); retrying` };
}

/**
 * TLS settings of the agent's wss:// connection: `ca`, the PEM certificate(s) to trust
 * besides the system's (`inss agent --ca`, for a self-signed or private-CA scheduler certificate).
 * `checkServerIdentity` replaces the host-name check; only `inss up`'s own agent uses it, to trust
 * exactly the certificate its scheduler serves on 127.0.0.1 whatever names that certificate carries.
 */
export interface AgentTls {
  readonly ca?: Buffer;
  readonly checkServerIdentity?: () => undefined;
}
