// Access rules (scheduler/auth.ts): route classes, bearer tokens, per-agent identities, token files.
import { describe, expect, it } from 'vitest';
import { agentIdentity, isLoopback, parseAgentTokens, parseTokens, refusal, routeClass } from '../../scheduler/auth.js';

const T = 'client-token-0123456789';
const bearer = (t: string) => `Bearer ${t}`;

describe('routes and tokens', () => {
  it('classes the routes: health and the dashboard page open, introspection, inference', () => {
    expect(routeClass('/v2/health/ready')).toBe('health');
    expect(routeClass('/dashboard')).toBe('page');
    expect(routeClass('/dashboard/app.js')).toBe('page');
    expect(routeClass('/dashboardx')).toBe('inference');
    expect(routeClass('/metrics')).toBe('introspection');
    expect(routeClass('/v2/inss/cluster')).toBe('introspection');
    expect(routeClass('/v2/inss/dashboard')).toBe('introspection');
    expect(routeClass('/v2/models/m/infer')).toBe('inference');
    expect(routeClass('/v2')).toBe('inference');
  });

  it('open access refuses nothing; client tokens close inference; introspection tokens close introspection', () => {
    expect(refusal({ clientTokens: [], introspectionTokens: null }, '/metrics', undefined)).toBeUndefined();
    const closed = { clientTokens: [T], introspectionTokens: [] };
    expect(refusal(closed, '/v2/models/m/infer', undefined)).toMatch(/needs a token/);
    expect(refusal(closed, '/v2/models/m/infer', bearer('x'.repeat(22)))).toMatch(/needs a token/);
    expect(refusal(closed, '/v2/models/m/infer', bearer(T))).toBeUndefined();
    expect(refusal(closed, '/metrics', bearer(T))).toBeUndefined();
    expect(refusal(closed, '/v2/health/live', undefined)).toBeUndefined();
    // The page and its assets hold no data; what it shows comes from the guarded /v2/inss/dashboard.
    expect(refusal(closed, '/dashboard/', undefined)).toBeUndefined();
    expect(refusal(closed, '/v2/inss/dashboard', undefined)).toMatch(/needs a token/);
    const introOnly = { clientTokens: [], introspectionTokens: ['intro-token-0123456789'] };
    expect(refusal(introOnly, '/v2/models/m/infer', undefined)).toBeUndefined();
    expect(refusal(introOnly, '/v2/inss/decisions', undefined)).toMatch(/needs a token/);
    expect(refusal(introOnly, '/v2/inss/decisions', 'Bearer intro-token-0123456789')).toBeUndefined();
    expect(refusal(introOnly, '/v2/inss/decisions', 'Basic intro-token-0123456789')).toMatch(/needs a token/);
  });

  it('an agent token binds its agent id; the shared token any id; anything else none', () => {
    const per = new Map([['a1', 'agent-one-token-0123456789']]);
    expect(agentIdentity(bearer('agent-one-token-0123456789'), 'shared-token-0123456789', per)).toEqual({
      agentId: 'a1',
    });
    expect(agentIdentity(bearer('shared-token-0123456789'), 'shared-token-0123456789', per)).toEqual({ any: true });
    expect(agentIdentity(bearer('shared-token-0123456789'), null, per)).toBeNull();
    expect(agentIdentity(undefined, 'shared-token-0123456789', per)).toBeNull();
  });

  it('tells loopback hosts from the others', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) expect(isLoopback(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', 'example.org']) expect(isLoopback(h), h).toBe(false);
  });
});

describe('token files', () => {
  it('reads tokens one a line with comments, and names the line of a bad one', () => {
    expect(parseTokens(`# clients\n${T}\n\n  other-token-0123456789  # ops\n`, 'f')).toEqual([
      T,
      'other-token-0123456789',
    ]);
    expect(() => parseTokens('short\n', 'f')).toThrow(/f, line 1: a token is one word of at least 16/);
    expect(() => parseTokens('# nothing\n', 'f')).toThrow(/no token/);
  });

  it('reads agent tokens and refuses a repeated id or a token shared by two agents', () => {
    expect(parseAgentTokens('a1 agent-one-token-0123456789\na2 agent-two-token-0123456789', 'f')).toEqual(
      new Map([
        ['a1', 'agent-one-token-0123456789'],
        ['a2', 'agent-two-token-0123456789'],
      ]),
    );
    expect(() => parseAgentTokens('a1 agent-one-token-0123456789\na1 agent-two-token-0123456789', 'f')).toThrow(
      /line 2: agent 'a1' is listed twice/,
    );
    expect(() => parseAgentTokens('a1 agent-one-token-0123456789\na2 agent-one-token-0123456789', 'f')).toThrow(
      /same token is given to two agents/,
    );
    expect(() => parseAgentTokens('a1\n', 'f')).toThrow(/line 1: expected '<agent-id> <token>'/);
  });
});
