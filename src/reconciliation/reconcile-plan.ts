/**
 * Reconciliation's rules, pure (issue 25): which orders are read again, when the next scheduled read is
 * due, and which fields of an order differ from the upstream's read. No Nest, no I/O, no clock: every
 * time is an input.
 *
 * The schedule (RECONCILE_AFTER, e.g. `1h,1d,7d`) counts from the moment the service found the order
 * finished (it plans it within a tick of its delivery), by the service's own clock: the upstream's
 * `delivered_at` is another machine's clock. A read missed (the service was down) is made once, at
 * once, never once per missed step.
 */
import { Decimal } from 'decimal.js';
import type { OrderStatus } from '../orders/order-state.js';

/**
 * Statuses a scheduled reconciliation reads: delivered and completed orders, and the partially
 * delivered or partially refunded ones that nothing follows any more (the poller follows an unfinished
 * order itself). `canceled` and `refunded` give nothing back that the upstream could still change.
 */
export const SCHEDULED_STATUSES: readonly OrderStatus[] = ['partially_delivered', 'delivered', 'completed', 'partially_refunded'];

/** Statuses an on-demand run reads: every finished upstream state. */
export const RANGE_STATUSES: readonly OrderStatus[] = [...SCHEDULED_STATUSES, 'canceled', 'refunded'];

export const isScheduledStatus = (s: string): boolean => (SCHEDULED_STATUSES as readonly string[]).includes(s);

// ------------------------------------------------------------------------------------- schedule

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** The longest step: a year. */
export const MAX_STEP_MS = 365 * 86_400_000;

/**
 * RECONCILE_AFTER: comma-separated durations after delivery (`1h,1d,7d`; units ms, s, m, h, d), strictly
 * increasing, at most 10 of them, each from 1 ms to a year; `off` (or `0`): no scheduled reconciliation.
 * Returns the steps in milliseconds, null for `off`, or the problem as a string.
 */
export function parseReconcileAfter(text: string): number[] | null | { problem: string } {
  const t = text.trim().toLowerCase();
  if (t === 'off' || t === '0') return null;
  const parts = t.split(',').map((p) => p.trim());
  if (parts.length > 10) return { problem: `at most 10 steps, got ${parts.length}` };
  const steps: number[] = [];
  for (const p of parts) {
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(p);
    if (!m) return { problem: `"${p}" is not a duration such as 300ms, 90s, 30m, 1h or 7d` };
    const ms = Number(m[1]) * UNITS[m[2]];
    if (!(ms >= 1 && ms <= MAX_STEP_MS)) return { problem: `"${p}" must be from 1ms to 365d` };
    if (steps.length > 0 && ms <= steps[steps.length - 1]) return { problem: 'the steps must be strictly increasing (1h,1d,7d)' };
    steps.push(ms);
  }
  return steps;
}

/** The first scheduled read of an order planned at `plannedAt`: its first step; null without steps. */
export function firstReconcileAt(plannedAt: Date, steps: readonly number[]): Date | null {
  return steps.length === 0 ? null : new Date(plannedAt.getTime() + steps[0]);
}

/** The next scheduled read after a read made at `readAt`: the first step later than it, null when none is left. */
export function nextReconcileAt(base: Date, steps: readonly number[], readAt: Date): Date | null {
  const next = steps.map((s) => base.getTime() + s).find((t) => t > readAt.getTime());
  return next === undefined ? null : new Date(next);
}

/** How often the scheduler looks for due reads: a quarter of the first step, from 50 ms to 1 s (two index lookups). */
export function reconcileTickMs(steps: readonly number[]): number {
  return Math.max(50, Math.min(1000, Math.floor((steps[0] ?? 4000) / 4)));
}

// ---------------------------------------------------------------------------------- differences

export type ReconciledField = 'status' | 'amount' | 'refunded_amount';
export const RECONCILED_FIELDS: readonly ReconciledField[] = ['status', 'amount', 'refunded_amount'];

/** The order as stored here. */
export interface LocalFacts {
  status: string;
  amount: string | null;
  refundedAmount: string | null;
}

/** The order as the upstream's `GET /orders/{id}` reads. */
export interface UpstreamFacts {
  status: string;
  amount?: string | null;
  refunded_amount?: string | null;
}

export interface Difference {
  field: ReconciledField;
  local: string | null;
  upstream: string | null;
}

const isMoney = (v: string): boolean => /^-?\d+(\.\d+)?$/.test(v);

/** Two amounts differ: by value when both are decimal strings (`1.5` equals `1.50`), else by text. */
function moneyDiffers(a: string, b: string): boolean {
  return isMoney(a) && isMoney(b) ? !new Decimal(a).eq(new Decimal(b)) : a !== b;
}

/**
 * The fields in which the upstream's read differs from the local order, in RECONCILED_FIELDS order. A
 * field the read does not carry (absent or null) is no difference: the upstream said nothing about it.
 * A local refunded amount that is not recorded reads as zero (nothing given back).
 */
export function orderDifferences(local: LocalFacts, upstream: UpstreamFacts): Difference[] {
  const out: Difference[] = [];
  if (upstream.status !== local.status) out.push({ field: 'status', local: local.status, upstream: upstream.status });
  if (upstream.amount != null && (local.amount === null || moneyDiffers(local.amount, upstream.amount))) {
    out.push({ field: 'amount', local: local.amount, upstream: upstream.amount });
  }
  if (upstream.refunded_amount != null && moneyDiffers(local.refundedAmount ?? '0', upstream.refunded_amount)) {
    out.push({ field: 'refunded_amount', local: local.refundedAmount, upstream: upstream.refunded_amount });
  }
  return out;
}

/** Whether the order as it now is carries the upstream's value of `d.field` (the poll's rules took it). */
export function differenceApplied(d: Difference, now: LocalFacts): boolean {
  const read: UpstreamFacts =
    d.field === 'status'
      ? { status: d.upstream ?? now.status }
      : d.field === 'amount'
        ? { status: now.status, amount: d.upstream }
        : { status: now.status, refunded_amount: d.upstream };
  return !orderDifferences(now, read).some((x) => x.field === d.field);
}
