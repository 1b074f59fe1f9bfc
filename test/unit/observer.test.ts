// The control plane's observer port (scheduler/observer.ts): the control plane tells one interface what
// happens; the Prometheus metrics and the SQLite store, both real here, record their part of it.
import { afterEach, describe, expect, it } from 'vitest';
import { Metrics } from '../../scheduler/metrics.js';
import { fanOut } from '../../scheduler/observer.js';
import { Store } from '../../scheduler/store.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';
import { ScriptedPolicy } from '../support/fakes.js';

const rtx = loadProfileFile('rtx2060s');
const MODELS = [{ name: 'resnet50', sloMs: 1000 }];
const harnesses: Harness[] = [];
const stores: Store[] = [];
afterEach(() => {
  for (const h of harnesses.splice(0)) h.control.stop();
  for (const s of stores.splice(0)) s.close();
});

describe('fanOut', () => {
  it('tells every observer of each event it implements, in order', () => {
    const seen: string[] = [];
    const o = fanOut([
      { swapCompleted: () => seen.push('a swap') },
      { agentCount: (n) => seen.push(`b ${n}`) },
      { swapCompleted: () => seen.push('c swap'), agentCount: (n) => seen.push(`c ${n}`) },
    ]);
    o.swapCompleted();
    o.agentCount(2);
    // Nobody listens: nothing happens.
    o.decided({ policy: 'p', ratePerS: [], deployment: null, decideMs: 0, nowIso: '', changed: true });
    expect(seen).toEqual(['a swap', 'c swap', 'b 2', 'c 2']);
  });
});

describe('the control plane through its observer port: metrics and SQLite record their part', () => {
  it('records the agent, the deployments that changed, the placements, answered tasks and the queue', async () => {
    const metrics = new Metrics();
    const store = new Store(':memory:');
    stores.push(store);
    const at = (pct: number) => ({ placements: [{ model: 0, gpu: 0, pct, batch: 1 }] });
    const h = controlHarness({
      models: MODELS,
      profiles: new Map([[rtx.id, rtx]]),
      policy: () => new ScriptedPolicy([at(50), at(50), at(70)]),
      gpus: simGpus('rtx2060s', 1),
      observers: [metrics, store],
    });
    harnesses.push(h);
    expect(store.agents().map((a) => [a.agentId, a.connected])).toEqual([['a1', true]]);
    h.report('ready');
    const t = h.submit(0);
    h.result(h.batches()[0]!.batchId, 5);
    expect(t.answer).toMatchObject({ ok: true });
    h.control.epoch(); // the same deployment: not a change
    h.control.epoch(); // 70%: a shadow starts
    expect(
      store.decisions().map((d) => (d.deployment as { placements: { pct: number }[] }).placements.map((p) => p.pct)),
    ).toEqual([[50], [70]]);
    expect(store.placements().map((p) => [p.workerId, p.pct, p.role])).toEqual([
      ['w1', 50, 'retiring'],
      ['w2', 70, 'shadow'],
    ]);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^inss_decisions_total 3$/m);
    expect(text).toMatch(/^inss_requests_total\{model="resnet50",outcome="ok"\} 1$/m);
    expect(text).toMatch(/^inss_queue_length\{model="resnet50"\} 0$/m);
    expect(text).toMatch(/^inss_agents_connected 1$/m);
    h.control.agentDisconnected('a1');
    expect(store.agents().map((a) => [a.agentId, a.connected])).toEqual([['a1', false]]);
  });

  it('writes nothing to a store that is closed', () => {
    const store = new Store(':memory:');
    store.close();
    expect(() =>
      store.agentJoined({ agentId: 'a', hostname: 'h', workerKind: 'sim', gpus: [], connected: true, nowIso: '' }),
    ).not.toThrow();
    expect(() => store.placementsChanged([], '')).not.toThrow();
  });
});
