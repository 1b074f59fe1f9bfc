// `inss profile derive`: profiles for the paper's cluster (RTX 2060 Super and RTX 2060), whose
// provenance is "derived" (docs/profiles-paper-cluster.md). No full latency tables of these GPUs
// are published; the paper gives a few points (Tables 2 and 3 of section 6.2, and batch-1
// throughputs at 100%), collected in data/paper-cluster/README.md. This folder
//  1. parses those points out of the README's text (`parsePaperTables`), so that no published
//     number is copied into the code;
//  2. fits a smooth parametric running-time surface o_r(batch, SMs) to each V100 analogue model;
//  3. carries each surface to the RTX 2060 Super by hardware ratios and bends it, by
//     Levenberg-Marquardt with prior residuals, until the full latency model of section 4.1
//     (transfers, scheduling, cache interference) reproduces the published points;
//  4. emits LWR samples of the surfaces, picks LWR bandwidths so that the compiled predictor
//     follows the surfaces, and scales the RTX 2060 Super profile to the RTX 2060.
// Pure: the caller reads the files and writes the result. Deterministic: no randomness anywhere.
import { LatencyModel, type Placement } from '../../../src/model/predictor.js';
import {
  InvalidInputError,
  type LwrSettings,
  type ModelProfile,
  type Profile,
  ProfileSchema,
} from '../../../src/profile/schema.js';
import { derivedMemory, MODEL_FACTS } from '../catalog.js';
import {
  type Coefficients,
  DERIVATIONS,
  type FitContext,
  fitModel,
  INPUT_BYTES,
  OUTPUT_BYTES,
  PCIE3_X16_BYTES_PER_MS,
} from './anchorFit.js';
import { type AnchorCell, type GpuSpec, type PaperAnchors, type ThroughputAnchor } from './anchors.js';
import { chooseLwr, gridPcts, roundSig, surfaceSamples } from './lwrGrid.js';
import { fitSurfaceToSamples, type Hardware, scaleSurfaceToGpu, scaleSurfaceToModel, type Surface } from './surface.js';

// ---------------------------------------------------------------------------------------------
// 6. The whole derivation
// ---------------------------------------------------------------------------------------------

export interface CellResult extends AnchorCell {
  readonly predictedMs: number;
  readonly relErr: number;
}

export interface ThroughputResult extends ThroughputAnchor {
  /** The compiled rtx2060s profile's b / t_inf at the anchor's batch and share. */
  readonly predictedPerS: number;
  readonly relErr: number;
  /** The same figure from the rtx2060 profile (no published counterpart). */
  readonly rtx2060PerS: number;
}

export interface DeriveReport {
  /** Every published cell, predicted by the compiled rtx2060s profile (LWR included). */
  readonly cells: readonly CellResult[];
  readonly maxCellRelErr: number;
  readonly throughputs: readonly ThroughputResult[];
  /** How well the parametric surface fits each V100 analogue's measured solo table. */
  readonly v100SurfaceFit: Readonly<Record<string, { meanRelErr: number; maxRelErr: number }>>;
  /** The fitted rtx2060s surfaces (in SMs of that GPU) and their priors. */
  readonly surfaces: Readonly<Record<string, { fitted: Surface; prior: Surface }>>;
  /** Interference coefficients the anchors moved from their V100-derived start. */
  readonly freedCoefficients: readonly { model: string; field: string; start: number; fitted: number }[];
  /**
   * LWR bandwidths chosen and how closely the compiled predictor follows the surfaces (every batch 1..32, every 1%
   * share).
   */
  readonly lwr: Readonly<
    Record<'rtx2060s' | 'rtx2060', { settings: LwrSettings; maxRelErr: number; meanRelErr: number }>
  >;
}

function requireHardware(p: Profile): Hardware {
  if (p.gpu.memBandwidthGBs === undefined)
    throw new InvalidInputError(`profile ${p.id}: gpu.memBandwidthGBs is needed to scale it to another GPU`);
  return { smCount: p.gpu.smCount, memBandwidthGBs: p.gpu.memBandwidthGBs, l2Mb: p.gpu.l2Mb };
}

/** `l` scaled to a GPU with a different L2: the same working set is a larger fraction of a smaller cache. */
function scaleL2(c: Coefficients, fromL2Mb: number, toL2Mb: number): Coefficients {
  const f = fromL2Mb / toL2Mb;
  return { alphaU: c.alphaU * f, betaU: c.betaU * f, alphaCache: c.alphaCache };
}

interface GpuBuild {
  readonly id: string;
  readonly spec: GpuSpec;
  readonly surfaces: ReadonlyMap<string, Surface>;
  readonly coeffs: ReadonlyMap<string, Coefficients>;
  readonly extraPcts: readonly number[];
  readonly source: string;
  readonly notes: readonly string[];
  readonly modelNotes: ReadonlyMap<string, string[]>;
}

function buildProfile(
  b: GpuBuild,
  v100: Profile,
  ctx: FitContext,
  command: string,
): { profile: Profile; lwr: { settings: LwrSettings; maxRelErr: number; meanRelErr: number } } {
  const pcts = gridPcts(b.spec.mpsUnitPct, b.extraPcts);
  const samples = new Map([...b.surfaces].map(([m, s]) => [m, surfaceSamples(s, b.spec.smCount, pcts)]));
  const lwr = chooseLwr(samples, b.surfaces, b.spec.smCount, b.spec.mpsUnitPct);
  const models: Record<string, ModelProfile> = {};
  for (const d of DERIVATIONS) {
    const c = b.coeffs.get(d.model)!;
    models[d.model] = {
      inputBytes: INPUT_BYTES,
      outputBytes: OUTPUT_BYTES,
      kernels: ctx.kernels.get(d.model)!,
      schedPerKernelMs: roundSig(ctx.schedPerKernelMs.get(d.model)!),
      l2: { alphaU: roundSig(c.alphaU), betaU: roundSig(c.betaU) },
      alphaCache: roundSig(c.alphaCache),
      memory: derivedMemory(MODEL_FACTS[d.model]!),
      runSamples: samples.get(d.model)!,
      notes: b.modelNotes.get(d.model) ?? [],
    };
  }
  const profile = ProfileSchema.parse({
    schemaVersion: 1,
    id: b.id,
    gpu: {
      name: `NVIDIA GeForce ${b.spec.name}`,
      smCount: b.spec.smCount,
      memMb: b.spec.memMb,
      l2Mb: b.spec.l2Mb,
      memBandwidthGBs: b.spec.memBandwidthGBs,
      pcieBytesPerMs: ctx.pcieBytesPerMs,
      mpsUnitPct: b.spec.mpsUnitPct,
      schedInterference: { ...v100.gpu.schedInterference },
      cacheSelfWeight: ctx.cacheSelfWeight,
    },
    lwr: lwr.settings,
    provenance: { kind: 'derived', source: b.source, command, notes: [...b.notes] },
    models,
  });
  return { profile, lwr };
}

/**
 * Derives the rtx2060s and rtx2060 profiles from the measured V100 profile and the published
 * points (docs/profiles-paper-cluster.md). `command` is recorded as the profiles' provenance.
 * Deterministic: the same inputs give byte-identical profiles.
 */
export function derivePaperCluster(
  v100: Profile,
  anchors: PaperAnchors,
  command: string,
): { rtx2060s: Profile; rtx2060: Profile; report: DeriveReport } {
  const v100Hw = requireHardware(v100);
  const super_ = anchors.gpus.rtx2060s;
  const plain = anchors.gpus.rtx2060;
  const known = new Set(DERIVATIONS.map((d) => d.model));
  for (const c of anchors.cells) {
    for (const p of c.placements)
      if (!known.has(p.model))
        throw new InvalidInputError(
          `${c.table}, row '${c.row}': model '${p.model}' is not one of the paper's eight (${[...known].join(', ')})`,
        );
  }

  // The V100 analogues' surfaces.
  const v100Fits: Record<string, { meanRelErr: number; maxRelErr: number }> = {};
  const v100Surfaces = new Map<string, Surface>();
  for (const d of DERIVATIONS) {
    for (const name of ['v100' in d.prior ? d.prior.v100 : null, d.coefficientsFrom]) {
      if (name === null || v100Surfaces.has(name)) continue;
      const m = v100.models[name];
      if (!m) throw new InvalidInputError(`profile ${v100.id}: model '${name}' is needed as an analogue but missing`);
      const fit = fitSurfaceToSamples(m.runSamples, v100.gpu.smCount);
      v100Surfaces.set(name, fit.surface);
      v100Fits[name] = { meanRelErr: fit.meanRelErr, maxRelErr: fit.maxRelErr };
    }
  }

  // Starting coefficients: the V100 analogue's, with L2 utilisation scaled by the L2-size ratio.
  const coeffs = new Map<string, Coefficients>();
  const schedPerKernelMs = new Map<string, number>();
  const kernels = new Map<string, number>();
  for (const d of DERIVATIONS) {
    const m = v100.models[d.coefficientsFrom]!;
    coeffs.set(d.model, scaleL2({ ...m.l2, alphaCache: m.alphaCache }, v100Hw.l2Mb, super_.l2Mb));
    schedPerKernelMs.set(d.model, m.schedPerKernelMs);
    kernels.set(d.model, MODEL_FACTS[d.model]!.kernels);
  }
  const ctx: FitContext = {
    smCount: super_.smCount,
    pcieBytesPerMs: PCIE3_X16_BYTES_PER_MS,
    cacheSelfWeight: v100.gpu.cacheSelfWeight,
    schedInterference: v100.gpu.schedInterference,
    kernels,
    schedPerKernelMs,
  };

  // Fit each model in turn, its prior carried from a V100 analogue or from a model fitted before it.
  const fitted = new Map<string, Surface>();
  const surfacesReport: Record<string, { fitted: Surface; prior: Surface }> = {};
  const freedCoefficients: DeriveReport['freedCoefficients'][number][] = [];
  const modelNotes = new Map<string, string[]>();
  for (const d of DERIVATIONS) {
    let prior: Surface;
    let priorNote: string;
    if ('v100' in d.prior) {
      prior = scaleSurfaceToGpu(v100Surfaces.get(d.prior.v100)!, v100Hw, super_);
      if (d.prior.v100 !== d.model) prior = scaleSurfaceToModel(prior, d.prior.v100, d.model);
      priorNote =
        `the measured V100 ${d.prior.v100} surface carried to this GPU by SM count and memory ` +
        `bandwidth${d.prior.v100 !== d.model ? ` and to ${d.model} by GFLOPs and kernels` : ''}`;
    } else {
      prior = scaleSurfaceToModel(fitted.get(d.prior.fitted)!, d.prior.fitted, d.model);
      priorNote = `this GPU's ${d.prior.fitted} surface scaled by GFLOPs and kernels`;
    }
    const r = fitModel(d.model, prior, anchors.cells, anchors.throughputs, coeffs, ctx);
    fitted.set(d.model, r.surface);
    surfacesReport[d.model] = { fitted: r.surface, prior };
    freedCoefficients.push(...r.freed);
    const nCells = anchors.cells.filter((c) => c.placements[0]!.model === d.model).length;
    const nTput = anchors.throughputs.filter((t) => t.model === d.model).length;
    const freedNote =
      r.freed.length > 0 ? `; ${r.freed.map((f) => `${f.model}.${f.field}`).join(', ')} adjusted to the anchors` : '';
    modelNotes.set(d.model, [
      `runSamples: a smooth surface (docs/profiles-paper-cluster.md) started from ${priorNote}, anchored on ` +
        `${nCells} published cells and ${nTput} published throughputs`,
      `l2, alphaCache, schedPerKernelMs: from the V100 ${d.coefficientsFrom}, ` +
        `L2 utilisation scaled by the L2-size ratio${freedNote}`,
      'memory: derived from public model facts (tools/fit/catalog.ts)',
    ]);
  }

  const anchorPcts = [
    ...new Set([
      ...anchors.cells.flatMap((c) => c.placements.map((p) => p.pct)),
      ...anchors.throughputs.map((t) => t.pct),
    ]),
  ];
  const docs = 'docs/profiles-paper-cluster.md';
  const superBuild = buildProfile(
    {
      id: 'rtx2060s',
      spec: super_,
      surfaces: fitted,
      coeffs,
      extraPcts: anchorPcts,
      source:
        `derived: shapes from the V100 profile ${v100.id} (measured), scaled by SM count, memory ` +
        `bandwidth and L2 size, anchored on InSS Tables 2 and 3 and the batch-1 throughputs ` +
        `(data/paper-cluster/README.md); ${docs}`,
      notes: [
        `PCIe 3.0 x16 taken as ${PCIE3_X16_BYTES_PER_MS} bytes/ms, the figure measured on the V100's PCIe 3.0 x16 host`,
        'the published cells are what this profile was anchored on: reproducing them shows the model form ' +
          'can express them, not that it predicts unseen points',
      ],
      modelNotes,
    },
    v100,
    ctx,
    command,
  );

  // rtx2060: the rtx2060s surfaces in SMs, carried by memory bandwidth; L2 utilisation by the L2-size ratio.
  const plainSurfaces = new Map([...fitted].map(([m, s]) => [m, scaleSurfaceToGpu(s, super_, plain)]));
  const plainCoeffs = new Map([...coeffs].map(([m, c]) => [m, scaleL2(c, super_.l2Mb, plain.l2Mb)]));
  const plainBuild = buildProfile(
    {
      id: 'rtx2060',
      spec: plain,
      surfaces: plainSurfaces,
      coeffs: plainCoeffs,
      extraPcts: [],
      source:
        `derived: the rtx2060s profile scaled to the RTX 2060 by SM count (shares become fewer SMs), ` +
        `memory bandwidth and L2 size; no published points of this GPU; ${docs}`,
      notes: [
        `PCIe 3.0 x16 taken as ${PCIE3_X16_BYTES_PER_MS} bytes/ms`,
        'no published latency of this GPU: every number is scaled from rtx2060s',
      ],
      modelNotes: new Map(
        DERIVATIONS.map((d) => [
          d.model,
          [
            `runSamples: the rtx2060s surface on 30 SMs, its DRAM-bound part slowed by the bandwidth ratio`,
            'l2: rtx2060s values scaled by the L2-size ratio; alphaCache and scheduling as rtx2060s',
            'memory: derived from public model facts (tools/fit/catalog.ts)',
          ],
        ]),
      ),
    },
    v100,
    ctx,
    command,
  );

  const compiled = LatencyModel.compile(superBuild.profile);
  const compiledPlain = LatencyModel.compile(plainBuild.profile);
  const cells = anchors.cells.map((c): CellResult => {
    const predictedMs = compiled.predict(c.placements).latencyMs[0]!;
    return { ...c, predictedMs, relErr: predictedMs / c.observedMs - 1 };
  });
  const throughputs = anchors.throughputs.map((t): ThroughputResult => {
    const p: Placement[] = [{ model: t.model, batch: t.batch, pct: t.pct }];
    const predictedPerS = compiled.predict(p).throughputPerS[0]!;
    return {
      ...t,
      predictedPerS,
      relErr: predictedPerS / t.ratePerS - 1,
      rtx2060PerS: compiledPlain.predict(p).throughputPerS[0]!,
    };
  });
  return {
    rtx2060s: superBuild.profile,
    rtx2060: plainBuild.profile,
    report: {
      cells,
      maxCellRelErr: Math.max(...cells.map((c) => Math.abs(c.relErr))),
      throughputs,
      v100SurfaceFit: v100Fits,
      surfaces: surfacesReport,
      freedCoefficients,
      lwr: { rtx2060s: superBuild.lwr, rtx2060: plainBuild.lwr },
    },
  };
}
