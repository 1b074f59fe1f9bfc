// Why an agent's connection to the scheduler failed, in words an operator can act on (issue 15).
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
    return { level: 'error', reason: `the scheduler refused the token (HTTP ${statusCode}): check the agent's token against the scheduler's; retrying` };
  }
  if (statusCode === 404) return { level: 'warn', reason: 'no agent hub at this URL (HTTP 404): check --scheduler; retrying' };
  if (statusCode !== undefined && statusCode >= 500) return { level: 'warn', reason: `the scheduler or a proxy failed the upgrade (HTTP ${statusCode}); retrying` };
  return { level: 'warn', reason: `the scheduler refused the connection (HTTP ${statusCode ?? 'unknown'}); retrying` };
}
