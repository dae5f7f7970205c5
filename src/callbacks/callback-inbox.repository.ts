/**
 * The inbox of verified callbacks: every one is stored (its summary, never its delivered items),
 * duplicates are recognised by the SHA-256 of the raw body, and pending ones are claimed by one
 * replica at a time (FOR UPDATE SKIP LOCKED, with a lease in `next_try_at`). A verified callback the
 * service cannot use (not a JSON object, no `order_id` or `status`) is stored already final, as
 * `ignored`: never claimed, never applied.
 *
 * `tries` counts the confirming reads (`GET /orders/{id}`) that failed, and nothing else: a claim, a
 * deferral (an attempt in flight, a cancel in progress) and a processing cut short by a shutdown leave it
 * as it is, so that waiting never uses up the bounded retrying of failed reads.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { numbered, rows } from '../database/prepared-statements.js';
import type { CallbackInboxRow } from '../database/rows.generated.js';

export interface CallbackSummary {
  /** The supplier whose URL it reached (and whose signature it carries). */
  supplier: string;
  bodySha256: string;
  event: string | null;
  upstreamOrderId: number;
  upstreamOrderNo: string | null;
  downstreamOrderNo: string | null;
  status: string;
  callbackTs: number | null;
}

/** A verified callback that names no usable order or status: what it carried, and why it is not used. */
export interface UnusableCallback {
  supplier: string;
  bodySha256: string;
  event: string | null;
  upstreamOrderId: number | null;
  upstreamOrderNo: string | null;
  downstreamOrderNo: string | null;
  status: string | null;
  callbackTs: number | null;
  /** Why it cannot be used (never a value from its body). */
  reason: string;
}

/** The row `storeWrite` returns. */
export interface StoredRow {
  inbox_id: CallbackInboxRow['id'];
  /** Times the same body came again (0: stored now). */
  inbox_duplicates: CallbackInboxRow['duplicates'];
}

export interface InboxRow {
  id: string;
  supplier: string;
  upstreamOrderId: number;
  downstreamOrderNo: string | null;
  status: string;
  /** Confirming reads of this callback that failed so far. */
  tries: number;
  /** When it was stored. */
  receivedAt: Date;
}

/**
 * The states the inbox's CHECK constraint allows. `unknown_order` also holds a callback whose upstream
 * order exists but is not the one its order follows (kept as an anomaly on the order): its `outcome`
 * then starts with `anomaly `.
 */
export type InboxState = 'applied' | 'unknown_order' | 'read_failed' | 'ignored';

@Injectable()
export class CallbackInboxRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Stores a verified callback: `pending`, for the processor; one that cannot be used (with its
   * `reason`) already final as `ignored`, never claimed, no order touched. `duplicate` when the same
   * body was stored before.
   */
  async store(c: CallbackSummary | UnusableCallback, now: Date, em?: EntityManager): Promise<{ id: string; duplicate: boolean }> {
    const w = this.storeWrite(c, now);
    const [row] = await rows<StoredRow>(em ?? this.dataSource, numbered(w.sql, 1), w.params);
    return this.stored(row);
  }

  /** What `storeWrite`'s row says: the inbox row, and whether the body was stored before. */
  stored(row: StoredRow): { id: string; duplicate: boolean } {
    return { id: String(row.inbox_id), duplicate: row.inbox_duplicates > 0 };
  }

  /**
   * `store` as a statement with `$?` placeholders returning one StoredRow, for a transaction that sends
   * it with its next statement (OrderTx.writeAndLockOrderNamed).
   */
  storeWrite(c: CallbackSummary | UnusableCallback, now: Date): { sql: string; params: unknown[] } {
    const unusable = 'reason' in c;
    return {
      sql: `INSERT INTO callback_inbox (body_sha256, event, upstream_order_id, upstream_order_no, downstream_order_no,
        reported_status, callback_ts,
                                   state, outcome, next_try_at, received_at, processed_at, supplier)
       VALUES ($?, $?, $?, $?, $?, $?, $?, $?, $?, $?, $?, $?, $?)
       ON CONFLICT (supplier, body_sha256) DO UPDATE SET duplicates = callback_inbox.duplicates + 1
       RETURNING id AS inbox_id, duplicates AS inbox_duplicates`,
      params: [
        c.bodySha256,
        c.event,
        c.upstreamOrderId,
        c.upstreamOrderNo,
        c.downstreamOrderNo,
        c.status,
        c.callbackTs,
        unusable ? 'ignored' : 'pending',
        unusable ? `unusable: ${c.reason}` : null,
        now,
        now,
        unusable ? now : null,
        c.supplier,
      ],
    };
  }

  /**
   * Claims due pending callbacks: the lease pushes `next_try_at` so no other replica takes them. A
   * claim is not a try (see `tries`).
   */
  async claim(now: Date, leaseUntil: Date, limit: number): Promise<InboxRow[]> {
    // a pending callback names its upstream order and status (`store` keeps one without them as ignored)
    const claimed = await rows<
      Pick<CallbackInboxRow, 'id' | 'supplier' | 'downstream_order_no' | 'tries' | 'received_at'> & {
        upstream_order_id: NonNullable<CallbackInboxRow['upstream_order_id']>;
        reported_status: NonNullable<CallbackInboxRow['reported_status']>;
      }
    >(
      this.dataSource,
      `UPDATE callback_inbox SET next_try_at = $2
        WHERE id IN (
          SELECT id FROM callback_inbox WHERE state = 'pending' AND next_try_at <= $1
           ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
        RETURNING id, supplier, upstream_order_id, downstream_order_no, reported_status, tries, received_at`,
      [now, leaseUntil, limit],
    );
    return claimed
      .map((r) => ({
        id: String(r.id),
        supplier: r.supplier,
        upstreamOrderId: Number(r.upstream_order_id),
        downstreamOrderNo: r.downstream_order_no,
        status: r.reported_status,
        tries: r.tries,
        receivedAt: new Date(r.received_at),
      }))
      .sort((a, b) => Number(a.id) - Number(b.id));
  }

  async finish(ids: string[], state: InboxState, outcome: string, orderId: string | null, now: Date): Promise<void> {
    const w = this.finishWrite(ids, state, outcome, orderId, now);
    await this.dataSource.query(numbered(w.sql, 1), w.params);
  }

  /** `finish` as a write with `$?` placeholders, for a transaction that sends it with its other writes (OrderTx.write). */
  finishWrite(ids: string[], state: InboxState, outcome: string, orderId: string | null, now: Date): { sql: string; params: unknown[] } {
    return {
      sql:
        `UPDATE callback_inbox SET state = $?, outcome = $?, order_id = $?, processed_at = $? WHERE id = ` +
        `ANY($?::bigint[]) AND state = 'pending'`,
      params: [state, outcome, orderId, now, ids],
    };
  }

  /**
   * Leaves callbacks pending until `at`: an attempt or a cancel of their order is in progress (their
   * `tries` untouched), or their confirming read failed (`failedReads`: the failed reads so far, this
   * one included, stored as their `tries`).
   */
  async defer(ids: string[], orderId: string | null, at: Date, outcome: string, failedReads?: number): Promise<void> {
    await this.dataSource.query(
      `UPDATE callback_inbox SET next_try_at = $2, order_id = $3, outcome = $4, tries = coalesce($5::int, tries) WHERE ` +
        `id = ANY($1::bigint[]) AND state = 'pending'`,
      [ids, at, orderId, outcome, failedReads ?? null],
    );
  }

  /**
   * Gives claimed callbacks back untouched (their processing was cut short by a shutdown): due at once
   * for the next processor, their `tries` as they were.
   */
  async giveBack(ids: string[], now: Date): Promise<void> {
    await this.dataSource.query(`UPDATE callback_inbox SET next_try_at = $2 WHERE id = ANY($1::bigint[]) AND state = 'pending'`, [
      ids,
      now,
    ]);
  }

  /**
   * Brings the next poll of a followed order (one with an upstream order and a next poll) to `at` at
   * the latest: next_poll_at = min(next_poll_at, at); the row is written only when that moves it.
   * Returns the order's next poll, or null when the poller does not follow the order.
   */
  async pollSooner(orderId: string, at: Date): Promise<Date | null> {
    const [row] = await rows<{ next_poll_at: Date | string }>(
      this.dataSource,
      `WITH moved AS (
         UPDATE orders SET next_poll_at = $2
          WHERE id = $1 AND upstream_order_id IS NOT NULL AND next_poll_at > $2
          RETURNING next_poll_at)
       SELECT next_poll_at FROM moved
       UNION ALL
       SELECT next_poll_at FROM orders
        WHERE id = $1 AND upstream_order_id IS NOT NULL AND next_poll_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM moved)`,
      [orderId, at],
    );
    return row ? new Date(row.next_poll_at) : null;
  }

  /** Makes the deferred callbacks of an order due now. */
  async release(orderId: string, now: Date): Promise<number> {
    const released = await rows(this.dataSource, `UPDATE callback_inbox SET next_try_at = $2 WHERE order_id = $1 AND state = 'pending'`, [
      orderId,
      now,
    ]);
    return released.length;
  }
}
