/**
 * The outbox table as the webhook sender and the operator see it (raw SQL). Every method is one
 * short statement or transaction; none of them ever waits for anything but the database.
 *
 * Claiming: due `pending` rows (the oldest first, never one whose subject has an earlier pending
 * event, so that a subject's events arrive in order) are taken with `FOR UPDATE SKIP LOCKED` and
 * leased by pushing `next_attempt_at` forward and stamping a `lease_token` (a new one per claim).
 * Only the holder of the token records the result, so a replica whose lease ran out and was claimed
 * again never overwrites the newer claim's state.
 *
 * Every time in `next_attempt_at` (due, lease, backoff) and the attempt times are the database's
 * (`now()`), never a process's clock: the replicas compare one clock, and a lease starts when the
 * claim runs, not when its process asked for a connection.
 */
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { PageRequest } from '../common/pagination.js';
import type { OutboxEventsRow } from '../database/rows.generated.js';
import { sqlRows } from '../ops/sql.js';
import type { WebhookEventRecord } from './webhook-request.js';

export type DeliveryStatus = 'pending' | 'delivered' | 'dead';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'dead'];

export interface ClaimedEvent extends WebhookEventRecord {
  /** Attempts made before this one. */
  attempts: number;
  leaseToken: string;
}

export interface DeliveryRecord {
  id: string;
  eventType: string;
  subject: string;
  payload: Record<string, unknown>;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  replays: number;
  createdAt: Date;
  deliveredAt: Date | null;
}

/**
 * An event as its statements read it (COLUMNS, and the lease where a claim returns it): the generated
 * row's columns, its status as the domain names it.
 */
type Row = Pick<
  OutboxEventsRow,
  | 'id'
  | 'event_type'
  | 'subject'
  | 'attempts'
  | 'next_attempt_at'
  | 'last_attempt_at'
  | 'last_status'
  | 'last_error'
  | 'replays'
  | 'created_at'
  | 'delivered_at'
> & {
  payload: Record<string, unknown> | string;
  status: DeliveryStatus;
  lease_token?: OutboxEventsRow['lease_token'];
};

const asJson = (v: Record<string, unknown> | string): Record<string, unknown> =>
  typeof v === 'string' ? (JSON.parse(v) as Record<string, unknown>) : v;

function toRecord(r: Row): DeliveryRecord {
  return {
    id: String(r.id),
    eventType: r.event_type,
    subject: r.subject,
    payload: asJson(r.payload),
    status: r.status,
    attempts: Number(r.attempts),
    nextAttemptAt: new Date(r.next_attempt_at),
    lastAttemptAt: r.last_attempt_at ? new Date(r.last_attempt_at) : null,
    lastStatus: r.last_status === null ? null : Number(r.last_status),
    lastError: r.last_error,
    replays: Number(r.replays),
    createdAt: new Date(r.created_at),
    deliveredAt: r.delivered_at ? new Date(r.delivered_at) : null,
  };
}

const COLUMNS = `id, event_type, subject, payload, status, attempts, next_attempt_at, last_attempt_at, last_status,
  last_error, replays, created_at, delivered_at`;

export interface AttemptResult {
  status: DeliveryStatus;
  /** When `pending`: the next attempt is due this long after the attempt is recorded (database clock). */
  retryInMs: number | null;
  httpStatus: number | null;
  error: string | null;
}

export type ReplayResult =
  { kind: 'replayed'; delivery: DeliveryRecord } | { kind: 'not_found' } | { kind: 'pending'; delivery: DeliveryRecord };

@Injectable()
export class OutboxRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Claims up to `limit` due events and leases them for `leaseMs`: both measured by the database's
   * clock when the claim runs (`now()`), whatever this process's clock says and however long it
   * waited for a connection.
   */
  async claimDue(leaseMs: number, limit: number): Promise<ClaimedEvent[]> {
    const token = randomUUID();
    const rows = await this.dataSource.transaction((em) =>
      sqlRows<Row>(
        em,
        `UPDATE outbox_events o
            SET next_attempt_at = now() + $1 * interval '1 millisecond', lease_token = $2
          WHERE o.id IN (
                SELECT e.id FROM outbox_events e
                 WHERE e.status = 'pending' AND e.next_attempt_at <= now()
                   -- the subject's oldest pending event of its family (order., sku., alert.: a shop's
                   -- order number may equal a sku_code, and one must not hold back the other), one
                   -- index probe each: outbox_events_pending_subject; the due ones in order by outbox_events_due_id
                   AND e.id = (SELECT p.id FROM outbox_events p
                                WHERE p.status = 'pending' AND p.subject = e.subject
                                  AND split_part(p.event_type, '.', 1) = split_part(e.event_type, '.', 1)
                                ORDER BY p.id LIMIT 1)
                 ORDER BY e.next_attempt_at, e.id
                 LIMIT $3
                 FOR UPDATE SKIP LOCKED)
          RETURNING o.id, o.event_type, o.subject, o.payload, o.attempts, o.created_at, o.next_attempt_at`,
        [leaseMs, token, limit],
      ),
    );
    return rows
      .map((r) => ({
        id: String(r.id),
        eventType: r.event_type,
        subject: r.subject,
        payload: asJson(r.payload),
        createdAt: new Date(r.created_at),
        attempts: Number(r.attempts),
        leaseToken: token,
      }))
      .sort((a, b) => Number(a.id) - Number(b.id));
  }

  /**
   * Records an attempt of a claimed event, stamped with the database's clock, and returns the next
   * attempt's due time (when `pending`). Written only while the row still carries this claim's token:
   * `recorded: false` when another claim took it since (its lease ran out), and nothing is written.
   */
  async recordAttempt(
    e: ClaimedEvent,
    result: AttemptResult,
  ): Promise<{ recorded: true; nextAttemptAt: Date | null } | { recorded: false }> {
    const rows = await sqlRows<{ next_attempt_at: Date }>(
      this.dataSource,
      `UPDATE outbox_events
          SET status = $3, attempts = attempts + 1, last_attempt_at = now(), last_status = $4, last_error = $5,
              next_attempt_at = CASE WHEN $6::int IS NULL THEN next_attempt_at ELSE now() + $6::int * interval '1 millisecond' END,
              delivered_at = CASE WHEN $3 = 'delivered' THEN now() ELSE delivered_at END,
              lease_token = NULL
        WHERE id = $1 AND lease_token = $2 AND status = 'pending'
        RETURNING next_attempt_at`,
      [
        e.id,
        e.leaseToken,
        result.status,
        result.httpStatus,
        result.error,
        result.status === 'pending' ? Math.round(result.retryInMs ?? 0) : null,
      ],
    );
    if (rows.length !== 1) return { recorded: false };
    return { recorded: true, nextAttemptAt: result.status === 'pending' ? new Date(rows[0].next_attempt_at) : null };
  }

  /** Gives claimed events back without counting an attempt (due at once). */
  async release(events: ClaimedEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.dataSource.query(
      `UPDATE outbox_events SET next_attempt_at = now(), lease_token = NULL
        WHERE id = ANY($1::bigint[]) AND lease_token = $2 AND status = 'pending'`,
      [events.map((e) => e.id), events[0].leaseToken],
    );
  }

  async counts(): Promise<Record<DeliveryStatus, number>> {
    const rows: Array<{ status: DeliveryStatus; n: number }> = await this.dataSource.query(
      `SELECT status, count(*)::int AS n FROM outbox_events WHERE status IN ('pending', 'dead') GROUP BY status`,
    );
    const out: Record<DeliveryStatus, number> = { pending: 0, delivered: 0, dead: 0 };
    for (const r of rows) out[r.status] = Number(r.n);
    return out;
  }

  async list(status: DeliveryStatus | undefined, page: PageRequest): Promise<{ items: DeliveryRecord[]; total: number }> {
    const where = status ? 'WHERE status = $1' : '';
    const params: unknown[] = status ? [status] : [];
    const [{ n }] = (await this.dataSource.query(`SELECT count(*)::int AS n FROM outbox_events ${where}`, params)) as Array<{ n: number }>;
    const rows: Row[] = await this.dataSource.query(
      `SELECT ${COLUMNS} FROM outbox_events ${where} ORDER BY id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, page.pageSize, page.offset],
    );
    return { items: rows.map(toRecord), total: Number(n) };
  }

  async get(id: string): Promise<DeliveryRecord | null> {
    const rows: Row[] = await this.dataSource.query(`SELECT ${COLUMNS} FROM outbox_events WHERE id = $1`, [id]);
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /**
   * Puts a `dead` (or `delivered`) event back into delivery, due at once, with a fresh attempt
   * count. A `pending` one is left alone: it is already on its way.
   */
  async replay(id: string): Promise<ReplayResult> {
    return this.dataSource.transaction(async (em) => {
      const rows: Row[] = await em.query(`SELECT ${COLUMNS} FROM outbox_events WHERE id = $1 FOR UPDATE`, [id]);
      if (!rows[0]) return { kind: 'not_found' as const };
      if (rows[0].status === 'pending') return { kind: 'pending' as const, delivery: toRecord(rows[0]) };
      const updated = await sqlRows<Row>(
        em,
        `UPDATE outbox_events
            SET status = 'pending', attempts = 0, next_attempt_at = now(), lease_token = NULL, replays = replays + 1
          WHERE id = $1
          RETURNING ${COLUMNS}`,
        [id],
      );
      return { kind: 'replayed' as const, delivery: toRecord(updated[0]) };
    });
  }
}
