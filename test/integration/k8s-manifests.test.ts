// deploy/k8s/: every manifest parses (yaml) and validates against the Kubernetes API schemas that the
// kubernetes-models package ships (no network); the Kustomization lists every manifest; the pieces
// name each other consistently (Service -> Deployment, volumes -> ConfigMap/PVC/Secret); the embedded
// scenario is a valid inss scenario; and the containers' commands use only flags the real `inss`
// CLI has (read from its --help, run as a process).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Service } from 'kubernetes-models/v1/Service';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../../cli/scenarios.js';
import { runCli } from '../support/cli.js';
import { REPO_ROOT } from '../support/paths.js';

const DIR = join(REPO_ROOT, 'deploy', 'k8s');

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: unknown;
  data?: Record<string, string>;
};
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
}
interface PodSpec {
  containers: Container[];
  volumes?: {
    name: string;
    configMap?: { name: string };
    secret?: { secretName: string };
    persistentVolumeClaim?: { claimName: string };
    hostPath?: { path: string };
  }[];
  hostIPC?: boolean;
  runtimeClassName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
}
interface Workload extends Manifest {
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}

/** Validators of the kinds deploy/k8s uses: each throws naming the field that is wrong. */
const VALIDATE: Record<string, (m: unknown) => void> = {
  'v1/Namespace': (m) => new Namespace(m as Namespace).validate(),
  'v1/ConfigMap': (m) => new ConfigMap(m as ConfigMap).validate(),
  'v1/PersistentVolumeClaim': (m) => new PersistentVolumeClaim(m as PersistentVolumeClaim).validate(),
  'v1/Service': (m) => new Service(m as Service).validate(),
  'apps/v1/Deployment': (m) => new Deployment(m as Deployment).validate(),
  'apps/v1/DaemonSet': (m) => new DaemonSet(m as DaemonSet).validate(),
};

function readManifests(): Map<string, Manifest[]> {
  const out = new Map<string, Manifest[]>();
  for (const f of readdirSync(DIR).filter((x) => x.endsWith('.yaml') && x !== 'kustomization.yaml')) {
    const docs = parseAllDocuments(readFileSync(join(DIR, f), 'utf8'));
    for (const d of docs) if (d.errors.length > 0) throw new Error(`${f}: ${d.errors[0]!.message}`);
    out.set(
      f,
      docs.map((d) => d.toJS() as Manifest),
    );
  }
  return out;
}

/** The flags a subcommand of the real CLI accepts, from its --help. */
async function cliFlags(sub: string): Promise<Set<string>> {
  const r = await runCli([sub, '--help']);
  expect(r.code, r.stderr).toBe(0);
  return new Set([...r.stdout.matchAll(/--[a-z][a-z0-9-]*/g)].map((m) => m[0]));
}

/** The `inss <sub> --flags...` a container runs, from its command and args (a shell line or an argv). */
function inssInvocation(c: Container): { sub: string; flags: string[]; args: string[] } {
  const line = [...(c.command ?? []), ...(c.args ?? [])].join(' ');
  const m = /\binss\s+([a-z]+)((?:\s+\S+)*)/.exec(line);
  if (!m) throw new Error(`container ${c.name} does not run inss: ${line}`);
  const args = m[2]!.trim().split(/\s+/);
  return { sub: m[1]!, flags: args.filter((a) => a.startsWith('--')), args };
}

const argValue = (args: string[], flag: string): string | undefined => args[args.indexOf(flag) + 1];

const all = readManifests();
const byKind = (kind: string): Manifest[] => [...all.values()].flat().filter((m) => m.kind === kind);
const named = (kind: string, name: string): Manifest => byKind(kind).find((m) => m.metadata.name === name)!;
const tmp = mkdtempSync(join(tmpdir(), 'inss-k8s-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('deploy/k8s', () => {
  it('every manifest validates against the Kubernetes schemas', () => {
    expect(all.size).toBeGreaterThanOrEqual(6);
    for (const [file, docs] of all) {
      for (const m of docs) {
        const v = VALIDATE[`${m.apiVersion}/${m.kind}`];
        expect(v, `${file}: no validator for ${m.apiVersion} ${m.kind}`).toBeDefined();
        expect(() => v!(m), `${file}: ${m.kind} ${m.metadata.name}`).not.toThrow();
      }
    }
  });

  it('the validation catches a broken manifest (a string where Kubernetes wants an integer, a missing field)', () => {
    const d = structuredClone(byKind('Deployment')[0]!) as Workload & { spec: { replicas: unknown } };
    d.spec.replicas = 'one';
    expect(() => VALIDATE['apps/v1/Deployment']!(d)).toThrow(/replicas must be integer/);
    const ds = structuredClone(byKind('DaemonSet')[0]!) as Workload;
    delete (ds.spec.template.spec.containers[0] as Partial<Container>).name;
    expect(() => VALIDATE['apps/v1/DaemonSet']!(ds)).toThrow(/required property name/);
  });

  it('the Kustomization lists every manifest and retags the image the containers use', () => {
    const k = parseAllDocuments(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8'))[0]!.toJS() as {
      kind: string;
      resources: string[];
      images: { name: string }[];
      namespace: string;
    };
    expect(k.kind).toBe('Kustomization');
    expect([...k.resources].sort()).toEqual([...all.keys()].sort());
    expect(byKind('Namespace').map((n) => n.metadata.name)).toEqual([k.namespace]);
    for (const w of [...byKind('Deployment'), ...byKind('DaemonSet')] as Workload[])
      for (const c of w.spec.template.spec.containers) expect(k.images.map((i) => i.name)).toContain(c.image);
  });

  it(
    'the scheduler: a Deployment behind the Service, its state on the PVC, the scenario from the ConfigMap, the ' +
      'token from the Secret',
    async () => {
      const d = named('Deployment', 'inss-scheduler') as Workload;
      const svc = named('Service', 'inss-scheduler') as Manifest & {
        spec: { selector: Record<string, string>; ports: { port: number; targetPort: string | number }[] };
      };
      const pod = d.spec.template.spec;
      expect(svc.spec.selector).toEqual(d.spec.template.metadata.labels);
      const c = pod.containers[0]!;
      const inv = inssInvocation(c);
      expect(inv.sub).toBe('scheduler');
      const known = await cliFlags('scheduler');
      for (const f of inv.flags) expect(known, `inss scheduler has no flag ${f}`).toContain(f);
      // The port it listens on is the one the Service targets.
      const port = Number(argValue(inv.args, '--port'));
      expect(c.ports!.find((p) => p.name === svc.spec.ports[0]!.targetPort)?.containerPort).toBe(port);
      expect(argValue(inv.args, '--host')).toBe('0.0.0.0');
      // Each path it is given is a mounted volume of the right kind.
      const mountOf = (path: string) => {
        const mount = c.volumeMounts!.find((v) => path.startsWith(v.mountPath));
        return pod.volumes!.find((v) => v.name === mount?.name);
      };
      expect(mountOf(argValue(inv.args, '--state-dir')!)?.persistentVolumeClaim?.claimName).toBe(
        byKind('PersistentVolumeClaim')[0]!.metadata.name,
      );
      const scenarioPath = argValue(inv.args, '--scenario')!;
      const cm = byKind('ConfigMap').find((m) => m.metadata.name === mountOf(scenarioPath)?.configMap?.name);
      expect(cm, 'the --scenario file comes from a ConfigMap of deploy/k8s').toBeDefined();
      // The scenario in the ConfigMap is one inss accepts.
      const file = join(tmp, 'scenario.json');
      writeFileSync(file, cm!.data![scenarioPath.split('/').pop()!]!);
      expect(loadScenario(file).scenario.models.length).toBeGreaterThan(0);
      const tokenFile = /--token-file (\S+)/.exec(c.args!.join(' '))![1]!;
      expect(mountOf(tokenFile)?.secret?.secretName).toBe('inss-token');
    },
  );

  it(
    'the agent: a DaemonSet on GPU nodes with the NVIDIA runtime, host IPC, host directories for MPS, the token ' +
      'from the Secret',
    async () => {
      const [ds] = byKind('DaemonSet') as Workload[];
      const pod = ds!.spec.template.spec;
      expect(pod.runtimeClassName).toBe('nvidia');
      expect(pod.hostIPC).toBe(true);
      expect(Object.keys(pod.nodeSelector ?? {})).toContain('nvidia.com/gpu.present');
      expect(pod.tolerations).toContainEqual({ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' });
      const c = pod.containers[0]!;
      const inv = inssInvocation(c);
      expect(inv.sub).toBe('agent');
      const known = await cliFlags('agent');
      for (const f of inv.flags) expect(known, `inss agent has no flag ${f}`).toContain(f);
      expect(argValue(inv.args, '--worker')).toBe('torch');
      // It reaches the scheduler through the Service, on the Service's port.
      const svc = named('Service', 'inss-scheduler') as Manifest & { spec: { ports: { port: number }[] } };
      const url = new URL(argValue(inv.args, '--scheduler')!);
      expect(url.protocol).toBe('ws:');
      expect(url.hostname).toBe(svc.metadata.name);
      expect(Number(url.port)).toBe(svc.spec.ports[0]!.port);
      // The state dir (MPS pipe and log directories under it) is a host directory.
      const stateDir = argValue(inv.args, '--state-dir')!;
      const mount = c.volumeMounts!.find((v) => stateDir.startsWith(v.mountPath))!;
      expect(pod.volumes!.find((v) => v.name === mount.name)?.hostPath?.path).toBe('/var/lib/inss');
      const tokenFile = /--token-file (\S+)/.exec(c.args!.join(' '))![1]!;
      const tokenMount = c.volumeMounts!.find((v) => tokenFile.startsWith(v.mountPath))!;
      expect(pod.volumes!.find((v) => v.name === tokenMount.name)?.secret?.secretName).toBe('inss-token');
    },
  );

  it('the front doors: replicas behind their Service, linked to the scheduler through its Service', async () => {
    const d = named('Deployment', 'inss-frontdoor') as Workload & { spec: { replicas: number } };
    const svc = named('Service', 'inss-frontdoor') as Manifest & {
      spec: { selector: Record<string, string>; ports: { port: number; targetPort: string | number }[] };
    };
    expect(d.spec.replicas).toBeGreaterThan(1);
    expect(svc.spec.selector).toEqual(d.spec.template.metadata.labels);
    const c = d.spec.template.spec.containers[0]!;
    const inv = inssInvocation(c);
    expect(inv.sub).toBe('frontdoor');
    const known = await cliFlags('frontdoor');
    for (const f of inv.flags) expect(known, `inss frontdoor has no flag ${f}`).toContain(f);
    const port = Number(argValue(inv.args, '--port'));
    expect(c.ports!.find((p) => p.name === svc.spec.ports[0]!.targetPort)?.containerPort).toBe(port);
    // Its link reaches the scheduler's door hub through the scheduler's Service, on that Service's port.
    const sched = named('Service', 'inss-scheduler') as Manifest & { spec: { ports: { port: number }[] } };
    const url = new URL(argValue(inv.args, '--scheduler')!);
    expect(url.hostname).toBe(sched.metadata.name);
    expect(Number(url.port)).toBe(sched.spec.ports[0]!.port);
    expect(url.pathname).toBe('/doors');
    // Peers forward to the pod's own address, on the port it listens on.
    expect(argValue(inv.args, '--advertise')).toBe(`"http://$POD_IP:${port}"`);
    expect(c.env!.find((e) => e.name === 'POD_IP')?.valueFrom?.fieldRef?.fieldPath).toBe('status.podIP');
    const tokenFile = /--token-file (\S+)/.exec(c.args!.join(' '))![1]!;
    const mount = c.volumeMounts!.find((v) => tokenFile.startsWith(v.mountPath))!;
    expect(d.spec.template.spec.volumes!.find((v) => v.name === mount.name)?.secret?.secretName).toBe('inss-token');
  });
});
