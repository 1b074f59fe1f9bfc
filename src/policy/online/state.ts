// The online-profiling state of one model on one GPU type (its AIMD batch, its fit's samples, its
// fitted profile once promoted), as JSON: what the scheduler persists (scheduler/store.ts) so that a
// restart resumes where the fit was. Validated when read back, like every input from outside.
import { z } from 'zod';
import { formatIssues, InvalidInputError, type ModelProfile, ModelProfileSchema } from '../../profile/schema.js';
import { emptyFitState, type FitState } from './fit.js';

export interface LearnerState {
  /** Served model name. */
  readonly model: string;
  /** The GPU profile (type) its batches ran on. */
  readonly profileId: string;
  /** AIMD's batch size now. */
  batch: number;
  fit: FitState;
  /** The fitted profile once it passed the held-out test (then the model is profiled); null before. */
  profile: ModelProfile | null;
  /** Usable batches taken when it passed (NaN: not yet). */
  promotedAfter: number;
  /** alpha_cache of `profile` was fitted from co-located batches. */
  alphaCacheFitted: boolean;
  /** Usable batches taken when `profile` was last set (0: never). */
  refreshedAt: number;
  /** `profile` was carried over from the fit on this GPU profile (prior.ts, `transferProfile`); null: its own. */
  transferredFrom: string | null;
  /** The latest held-out test. */
  heldOut: number;
  meanRelErr: number;
  /** The share probe (probe.ts): the share it runs at, 100 where there is none; NaN: not decided yet. */
  probePct: number;
}

const positive = z.number().finite().positive();
const count = z.number().int().min(0);
const SampleSchema = z
  .object({
    batch: z.number().int().min(1),
    pct: z.number().gt(0).max(100),
    execMs: positive,
    models: z.number().int().min(1),
    othersL2: z.number().finite().min(0),
  })
  .strict();

export const LearnerStateSchema = z
  .object({
    model: z.string().min(1),
    profileId: z.string().min(1),
    batch: z.number().int().min(1),
    fit: z
      .object({
        seen: count,
        solo: z.array(
          z
            .object({
              batch: z.number().int().min(1),
              pct: z.number().gt(0).max(100),
              n: z.number().int().min(1),
              sumLogMs: z.number().finite(),
            })
            .strict(),
        ),
        colocated: z.array(SampleSchema),
        heldOut: z.array(SampleSchema),
        // State saved before memory was read has none.
        memory: z
          .array(
            z
              .object({ batch: z.number().int().min(1), n: z.number().int().min(1), sumMb: z.number().finite().min(0) })
              .strict(),
          )
          .default([]),
      })
      .strict(),
    profile: ModelProfileSchema.nullable(),
    // JSON has no NaN: null stands for it.
    promotedAfter: z.number().nullable(),
    alphaCacheFitted: z.boolean(),
    refreshedAt: count,
    transferredFrom: z.string().min(1).nullable(),
    heldOut: count,
    meanRelErr: z.number().nullable(),
    // State saved before the share probe has none: not decided.
    probePct: z.number().gt(0).max(100).nullable().default(null),
  })
  .strict();

/** A model's state on a GPU type before any batch: batch 1, nothing fitted. */
export function newLearner(model: string, profileId: string): LearnerState {
  return {
    model,
    profileId,
    batch: 1,
    fit: emptyFitState(),
    profile: null,
    promotedAfter: NaN,
    alphaCacheFitted: false,
    refreshedAt: 0,
    transferredFrom: null,
    heldOut: 0,
    meanRelErr: NaN,
    probePct: NaN,
  };
}

/** The state as JSON (NaN written as null). */
export function learnerToJson(s: LearnerState): unknown {
  const nan = (x: number) => (Number.isNaN(x) ? null : x);
  return { ...s, promotedAfter: nan(s.promotedAfter), meanRelErr: nan(s.meanRelErr), probePct: nan(s.probePct) };
}

/** Validates persisted state; `where` names its source in the error. */
export function learnerFromJson(raw: unknown, where: string): LearnerState {
  const r = LearnerStateSchema.safeParse(raw);
  if (!r.success) throw new InvalidInputError(`${where}: invalid online-profiling state: ${formatIssues(r.error)}`);
  const d = r.data;
  return {
    ...d,
    fit: {
      seen: d.fit.seen,
      solo: d.fit.solo,
      colocated: d.fit.colocated,
      heldOut: d.fit.heldOut,
      memory: d.fit.memory,
    },
    promotedAfter: d.promotedAfter ?? NaN,
    meanRelErr: d.meanRelErr ?? NaN,
    probePct: d.probePct ?? NaN,
  };
}

/** Where the decorator keeps learner state between runs (the scheduler's SQLite store implements it). */
export interface OnlineStatePort {
  /** The state saved for a model on a GPU profile, as JSON, or null. */
  load(model: string, profileId: string): unknown;
  save(model: string, profileId: string, state: unknown): void;
}

/**
 * The learner of `model` on GPU profile `profileId` as `store` saved it, or a fresh one where it saved none or what it
 * saved does not validate or names another model or GPU profile (`notes` then says why).
 */
export function restoreLearner(
  store: OnlineStatePort | undefined,
  model: string,
  profileId: string,
  notes: string[],
): LearnerState {
  const fresh = newLearner(model, profileId);
  const raw = store?.load(model, profileId);
  if (raw === null || raw === undefined) return fresh;
  try {
    const s = learnerFromJson(raw, `online-profiling state of ${model} on ${profileId}`);
    if (s.model === model && s.profileId === profileId) return s;
    notes.push(`stored state of ${model} on ${profileId} names another model or GPU profile: started afresh`);
  } catch (e) {
    notes.push(`${(e as Error).message}: started afresh`);
  }
  return fresh;
}
