// The inss dashboard page: polls GET /v2/inss/dashboard (scheduler/dashboard.ts) and draws the GPUs'
// shares and memory, the workers, per-model series (uPlot), the timeline of decisions and shadow
// swaps, and the agents. A token for a guarded scheduler comes from the page address,
// /dashboard/#token=..., and is sent as `Authorization: Bearer`; it never leaves the page otherwise.
/* global window, document, location, uPlot */
'use strict';

const DATA_URL = '../v2/inss/dashboard';
const MAX_CHARTED = 8;
const KEEP_MS = 5 * 60 * 1000;

const token = new URLSearchParams(location.hash.slice(1)).get('token');
const state = { since: null, t: [], models: {}, charted: null, charts: [], chartedKey: '', epochMs: 1000, updates: 0 };

// ---- small DOM helpers (text only: model names and messages are never parsed as HTML) ------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'class') e.className = v;
    else if (k === 'style') Object.assign(e.style, v);
    else if (k.startsWith('data-')) e.setAttribute(k, String(v));
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof window.Node ? c : String(c));
  return e;
}

function fillBody(table, rows) {
  const body = document.querySelector(`${table} tbody`);
  body.replaceChildren(...rows);
}

// One colour per model, in the scheduler's model order: ten well-separated ones (Tableau 10), then
// golden-angle hues (past ten, neighbours stay apart; only the charted ones, at most 8, need telling apart).
const TABLEAU = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
];
const palette = new Map();
function colour(name) {
  if (!palette.has(name)) {
    const i = palette.size;
    palette.set(
      name,
      i < TABLEAU.length
        ? TABLEAU[i]
        : `hsl(${Math.round((i * 137.508) % 360)}, ${62 - (i % 3) * 8}%, ${42 + (i % 2) * 10}%)`,
    );
  }
  return palette.get(name);
}

const fmt = (x, digits = 1) => (x === null || x === undefined || Number.isNaN(x) ? '-' : Number(x).toFixed(digits));
const pctText = (x) => (x === null || x === undefined ? '-' : `${(100 * x).toFixed(1)}%`);
const clock = (t) => new Date(t).toLocaleTimeString([], { hour12: false });

// ---- data ---------------------------------------------------------------------------------------

function merge(view) {
  const s = view.series;
  for (const name of Object.keys(s.models)) {
    const m = (state.models[name] ||= { rate: [], queued: [], attainment: [], p99Ms: [] });
    for (const k of ['rate', 'queued', 'attainment', 'p99Ms']) m[k].push(...s.models[name][k]);
  }
  state.t.push(...s.t);
  const cut = state.t.findIndex((t) => t >= view.now - KEEP_MS);
  if (cut > 0) {
    state.t.splice(0, cut);
    for (const m of Object.values(state.models)) for (const k of Object.keys(m)) m[k].splice(0, cut);
  }
  if (state.t.length > 0) state.since = state.t[state.t.length - 1];
}

// ---- GPUs ---------------------------------------------------------------------------------------

function renderGpus(view) {
  const cards = view.gpus.map((g) => {
    const ws = g.workers;
    const total = Math.max(
      100,
      ws.reduce((a, w) => a + w.pct, 0),
    );
    const bar = el(
      'div',
      { class: 'bar share', title: 'MPS share of each worker' },
      ...ws.map((w) =>
        el(
          'div',
          {
            class: `seg ${w.role}`,
            'data-model': w.model,
            'data-worker': w.workerId,
            'data-pct': w.pct,
            'data-role': w.role,
            style: { width: `${(100 * w.pct) / total}%`, background: colour(w.model) },
            title: `${w.model}: ${w.pct}% (batch ${w.batch}, ${w.role}, ${w.state})`,
          },
          w.pct >= 10 ? `${w.model} ${w.pct}%` : '',
        ),
      ),
    );
    const memUsed = g.memMeasuredMb ?? g.memPredictedMb;
    const memText = g.memTotalMb
      ? `${fmt(memUsed, 0)} / ${fmt(g.memTotalMb, 0)} MB ${g.memMeasuredMb !== null ? 'measured' : 'predicted'}`
      : `${fmt(memUsed, 0)} MB`;
    const mem = el(
      'div',
      { class: 'bar mem', title: 'GPU memory' },
      el('div', {
        class: 'fill',
        style: { width: `${g.memTotalMb && memUsed !== null ? Math.min(100, (100 * memUsed) / g.memTotalMb) : 0}%` },
      }),
      el('span', { class: 'label' }, `memory ${memText}`),
    );
    const list = el(
      'ul',
      { class: 'gpu-models' },
      ...ws.map((w) =>
        el(
          'li',
          { 'data-model': w.model },
          el('span', { class: 'swatch', style: { background: colour(w.model) } }),
          el('span', { class: 'name' }, w.model),
          `${w.pct}%`,
          el('span', { class: 'muted' }, `b${w.batch} ${w.role === 'active' ? '' : w.role} ${w.state}`),
        ),
      ),
    );
    const used = ws.filter((w) => w.role !== 'shadow').reduce((a, w) => a + w.pct, 0);
    const title = el(
      'div',
      { class: 'gpu-title' },
      `GPU ${g.index} `,
      el(
        'small',
        {},
        `${g.agentId}:${g.local} ${g.profile ?? ''} ${g.mode.toUpperCase()} - ${used}% to serving workers, ` +
          `${ws.length} worker${ws.length === 1 ? '' : 's'}` +
          (g.utilPct !== null ? `, util ${fmt(g.utilPct, 0)}%` : ''),
      ),
    );
    return el('div', { class: 'gpu', 'data-gpu': g.index }, title, bar, mem, list);
  });
  document
    .getElementById('gpus')
    .replaceChildren(
      ...(cards.length ? cards : [el('p', { class: 'muted' }, 'No GPU yet: no agent with GPUs is connected.')]),
    );
}

// ---- tables -------------------------------------------------------------------------------------

function renderModels(view) {
  if (state.charted === null) {
    // At first, chart the busiest models (by their latest arrival rate).
    const byRate = [...view.models].sort((a, b) => (b.latest?.ratePerS ?? 0) - (a.latest?.ratePerS ?? 0));
    state.charted = new Set(byRate.slice(0, Math.min(6, MAX_CHARTED)).map((m) => m.name));
  }
  fillBody(
    '#models',
    view.models.map((m) => {
      const l = m.latest;
      const box = el('input', { type: 'checkbox', checked: state.charted.has(m.name), title: 'chart this model' });
      box.addEventListener('change', () => {
        if (box.checked && state.charted.size >= MAX_CHARTED) {
          box.checked = false;
          setStatus(`at most ${MAX_CHARTED} models are charted at once: untick one first`, true);
          return;
        }
        if (box.checked) state.charted.add(m.name);
        else state.charted.delete(m.name);
        renderCharts();
      });
      const att = l?.attainment ?? null;
      return el(
        'tr',
        { 'data-model': m.name },
        el('td', {}, box),
        el('td', {}, el('span', { class: 'swatch', style: { background: colour(m.name) } }), ' ', m.name),
        el('td', { class: 'num' }, m.sloMs),
        el('td', { class: 'num' }, fmt(l?.ratePerS)),
        el('td', { class: 'num' }, l ? l.queued : '-'),
        el('td', { class: `num ${att === null ? '' : att >= 0.99 ? 'ok' : 'bad'}` }, pctText(att)),
        el('td', { class: `num ${l?.p99Ms > m.sloMs ? 'bad' : ''}` }, fmt(l?.p99Ms)),
      );
    }),
  );
}

function renderEvents(view) {
  fillBody(
    '#events',
    view.events.map((e) => {
      const kind = e.kind === 'agent' && !e.connected ? 'agent-down' : e.kind;
      const models = e.model ? [e.model] : (e.changes ?? []).map((c) => c.model);
      return el(
        'tr',
        { 'data-kind': e.kind, 'data-models': models.join(' '), ...(e.model ? { 'data-model': e.model } : {}) },
        el('td', {}, clock(e.t)),
        el('td', {}, el('span', { class: `badge ${kind}` }, e.kind)),
        el('td', { class: 'wrap' }, e.text),
      );
    }),
  );
}

function renderWorkers(view) {
  fillBody(
    '#workers',
    view.workers.map((w) =>
      el(
        'tr',
        { 'data-worker': w.workerId, 'data-state': w.state },
        el('td', {}, w.workerId),
        el('td', {}, w.model),
        el('td', { class: 'num' }, w.gpu),
        el('td', { class: 'num' }, `${w.pct}%`),
        el('td', { class: 'num' }, w.batch),
        el('td', {}, w.role),
        el('td', { class: w.state === 'failed' ? 'bad' : w.state === 'ready' ? 'ok' : '' }, w.state),
        el('td', {}, w.busy ? 'yes' : ''),
        el('td', { class: 'num' }, w.pid ?? '-'),
      ),
    ),
  );
}

function renderAgents(view) {
  fillBody(
    '#agents',
    view.agents.map((a) =>
      el(
        'tr',
        { 'data-agent': a.agentId },
        el('td', {}, a.agentId),
        el('td', {}, a.hostname),
        el('td', { class: a.connected ? 'ok' : 'bad' }, a.connected ? 'connected' : 'disconnected'),
        el('td', {}, a.workerKind),
        el('td', { class: 'num' }, a.gpus),
      ),
    ),
  );
}

// ---- charts -------------------------------------------------------------------------------------

const CHARTS = [
  { key: 'rate', title: 'arrival rate (requests/s)', scale: (v) => v },
  { key: 'queued', title: 'queue (tasks waiting)', scale: (v) => v },
  { key: 'attainment', title: 'SLO attainment (%), last 5 epochs', scale: (v) => (v === null ? null : 100 * v) },
  { key: 'p99Ms', title: 'latency p99 (ms), last 5 epochs', scale: (v) => v },
];

function chartData(key, scale, names) {
  return [state.t.map((t) => t / 1000), ...names.map((n) => (state.models[n]?.[key] ?? []).map(scale))];
}

function renderCharts() {
  const names = [...state.charted].filter((n) => state.models[n]);
  const key = names.join('\u0000');
  const box = document.getElementById('charts');
  if (key !== state.chartedKey || state.charts.length === 0) {
    for (const c of state.charts) c.destroy();
    box.replaceChildren();
    state.chartedKey = key;
    const width = Math.max(360, Math.floor((box.clientWidth - 10) / 2) - 12);
    state.charts = CHARTS.map((c) => {
      const holder = el('div', { class: 'chart', 'data-chart': c.key });
      box.append(holder);
      return new uPlot(
        {
          title: c.title,
          width,
          height: 200,
          scales: { x: { time: true } },
          series: [{}, ...names.map((n) => ({ label: n, stroke: colour(n), width: 1.5, spanGaps: false }))],
          // One row of clock times (uPlot's default adds a date row that collides on narrow charts).
          axes: [{ space: 70, values: (_u, ticks) => ticks.map((t) => clock(t * 1000)) }, { size: 50 }],
          legend: { live: false },
        },
        chartData(c.key, c.scale, names),
        holder,
      );
    });
    return;
  }
  CHARTS.forEach((c, i) => state.charts[i].setData(chartData(c.key, c.scale, names)));
}

// ---- loop ---------------------------------------------------------------------------------------

function setStatus(text, error) {
  const s = document.getElementById('status');
  s.textContent = text;
  s.classList.toggle('error', Boolean(error));
}

async function poll() {
  try {
    const res = await fetch(state.since === null ? DATA_URL : `${DATA_URL}?since=${state.since}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    if (res.status === 401 || res.status === 403) {
      setStatus('this scheduler needs a token: open /dashboard/#token=YOUR_TOKEN', true);
    } else if (!res.ok) {
      setStatus(`the scheduler answered ${res.status}`, true);
    } else {
      const view = await res.json();
      state.epochMs = view.epochMs;
      for (const m of view.models) colour(m.name); // colours follow the scheduler's model order
      merge(view);
      renderGpus(view);
      renderModels(view);
      renderEvents(view);
      renderWorkers(view);
      renderAgents(view);
      renderCharts();
      const connected = view.agents.filter((a) => a.connected).length;
      document.getElementById('summary').textContent =
        `policy ${view.policy ?? '-'}${view.policyError ? ` (cannot run: ${view.policyError})` : ''} - ` +
        `${view.gpus.length} GPUs, ${view.models.length} models, ${view.workers.length} workers, ` +
        `${connected}/${view.agents.length} agents - ${view.totals.swaps} shadow swaps`;
      state.updates++;
      document.body.dataset.updates = String(state.updates);
      setStatus(`updated ${clock(view.now)}`, false);
    }
  } catch (e) {
    setStatus(`cannot reach the scheduler (${e.message}); retrying`, true);
  }
  window.setTimeout(poll, Math.max(1000, state.epochMs));
}

window.addEventListener('resize', () => {
  state.chartedKey = '';
  if (state.charted) renderCharts();
});
void poll();
