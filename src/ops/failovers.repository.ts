/**
 * The failovers of offer orders (CONTRACT §11) as the database recorded them, for the console's
 * dashboard: each move of an order to its next source is a status event whose detail carries
 * `failover_from` and `reason` (OfferPlacement's follow-up of a refusal). Read from the database, so
 * that the counts survive restarts and are the same on every replica. One statement over the partial
 * index `order_events_failovers` (the failover events only, by time).
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sqlRows } from './sql.js';

export interface FailoverCount {
  /** The refusal that moved the order on (an error code; `unknown` when none was recorded). */
  reason: string;
  count: number;
}

@Injectable()
export class FailoversRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The failovers recorded at or after `since`, by reason: the most frequent first, then by reason. */
  async byReason(since: Date): Promise<FailoverCount[]> {
    const rows = await sqlRows<{ reason: string; count: number }>(
      this.dataSource,
      `SELECT coalesce(detail->>'reason', 'unknown') AS reason, count(*)::int AS count
         FROM order_events
        WHERE detail ? 'failover_from' AND created_at >= $1
        GROUP BY 1 ORDER BY 2 DESC, 1`,
      [since],
    );
    return rows.map((r) => ({ reason: r.reason, count: Number(r.count) }));
  }
}
