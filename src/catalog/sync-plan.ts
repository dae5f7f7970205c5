/**
 * Which kind of pass a run makes (pure).
 *
 * - `full` (asked for, or SYNC_MODE=full): every page of the listing; only a complete full pass may
 *   delist.
 * - `incremental`: only what changed since the last complete run, minus a safety window
 *   (`updated_after`), when there is such a run; never delists.
 * - `auto` (the default): incremental, except that a full pass is made when none succeeded within
 *   SYNC_FULL_EVERY, and while the upstream refused the filter at the last try, for SYNC_FULL_EVERY
 *   after that try: then the filter is tried again (an upstream may learn it; and the runs in between
 *   are planned full, so they never try it themselves).
 * SYNC_MODE=incremental is `auto` without the memory of a refusal (it tries the filter every time).
 * A full pass is due after SYNC_FULL_EVERY whatever the mode, unless a run explicitly asks for an
 * incremental one.
 */
import type { SyncMode } from '../config/app-config.js';

export type PassMode = 'full' | 'incremental';

/** How far back an incremental pass looks before the start of the last complete run. */
export const INCREMENTAL_SAFETY_WINDOW_MS = 5 * 60_000;

export interface PlanInputs {
  /** Asked for by the caller (POST /internal/catalog/sync, the CLI); undefined: the configured mode. */
  requested?: PassMode;
  configured: SyncMode;
  now: Date;
  fullEveryMs: number;
  /** Start of the last succeeded run of any mode. */
  lastCompleteAt: Date | null;
  /** Start of the last succeeded full pass. */
  lastFullAt: Date | null;
  /**
   * When the last run that tried the filter started, if the upstream refused it then (null: it was
   * accepted, or never tried).
   */
  filterRefusedAt: Date | null;
  safetyWindowMs?: number;
}

export interface PassPlan {
  mode: PassMode;
  /** For incremental passes: the `updated_after` to send. */
  updatedAfter: Date | null;
  reason: string;
}

export function planPass(i: PlanInputs): PassPlan {
  const full = (reason: string): PassPlan => ({ mode: 'full', updatedAfter: null, reason });
  const wanted = i.requested ?? i.configured;
  if (wanted === 'full') return full(i.requested ? 'full pass requested' : 'SYNC_MODE=full');
  if (i.lastCompleteAt === null) return full('no complete run yet');
  const updatedAfter = new Date(i.lastCompleteAt.getTime() - (i.safetyWindowMs ?? INCREMENTAL_SAFETY_WINDOW_MS));
  const incremental = (reason: string): PassPlan => ({ mode: 'incremental', updatedAfter, reason });
  if (i.requested === 'incremental') return incremental('incremental pass requested');
  if (i.lastFullAt === null || i.now.getTime() - i.lastFullAt.getTime() >= i.fullEveryMs) {
    return full('a full pass is due (SYNC_FULL_EVERY)');
  }
  if (wanted === 'auto' && i.filterRefusedAt !== null) {
    if (i.now.getTime() - i.filterRefusedAt.getTime() < i.fullEveryMs) return full('the upstream refused updated_after last time');
    return incremental('auto: the upstream refused updated_after more than SYNC_FULL_EVERY ago, trying it again');
  }
  return incremental(wanted === 'auto' ? 'auto: full pass not due' : 'SYNC_MODE=incremental');
}
