/**
 * The refunds an upstream order detail reports (`refund_records`, newer Dujiao-Next), pure: read
 * leniently (the amount a string or a number, times RFC 3339 with any precision or offset), kept in
 * one shape: money as a decimal string with two places, times in UTC ISO. An entry without a usable
 * amount is left out; a list that is not an array is no list (undefined: the report says nothing).
 */
import { Decimal } from 'decimal.js';

export interface RefundRecord {
  /** The upstream order the refund was recorded on (the order, or one of its child orders). */
  upstream_order_id: number | null;
  /** `wallet` or `manual` on Dujiao-Next. */
  type: string | null;
  amount: string;
  currency: string | null;
  remark: string | null;
  created_at: string | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);

function money(v: unknown): string | null {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  try {
    const d = new Decimal(v);
    return d.isFinite() && d.gte(0) ? d.toFixed(2) : null;
  } catch {
    return null;
  }
}

function instant(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const t = new Date(v);
  return Number.isNaN(t.getTime()) ? null : t.toISOString();
}

export function normalizeRefundRecords(raw: unknown): RefundRecord[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) return undefined;
  const out: RefundRecord[] = [];
  for (const r of raw) {
    if (typeof r !== 'object' || r === null) continue;
    const e = r as Record<string, unknown>;
    const amount = money(e.amount);
    if (amount === null) continue;
    out.push({
      upstream_order_id: typeof e.order_id === 'number' && Number.isSafeInteger(e.order_id) ? e.order_id : null,
      type: str(e.type),
      amount,
      currency: str(e.currency),
      remark: str(e.remark),
      created_at: instant(e.created_at),
    });
  }
  return out;
}
