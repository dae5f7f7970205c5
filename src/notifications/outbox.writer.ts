/**
 * Writes shop notifications into the outbox inside the caller's transaction, so an event exists
 * exactly when the change it announces was committed. Without SHOP_WEBHOOK_URL nothing is written.
 */
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { numbered } from '../database/prepared-statements.js';

export type OutboxEventType =
  | 'order.status_changed'
  | 'order.reconciled'
  | 'sku.price_changed'
  | 'sku.stock_changed'
  | 'sku.listing_changed'
  | 'alert.wallet_low'
  | 'alert.order_stuck'
  | 'alert.sync_failed'
  | 'alert.wallet_recovered'
  | 'alert.upstream_auth_failed'
  | 'product.changed'
  | 'offer.changed';

export interface OutboxEvent {
  type: OutboxEventType;
  /** A shop_order_no, a sku_code, an offer's code, or an alert key. */
  subject: string;
  payload: Record<string, unknown>;
  /**
   * Members of the payload computed by the statement that writes the row: a jsonb SQL expression each
   * (no parameter of its own), by member name. The caller sends the insert where the expressions mean
   * something: an offer order's `route` is ORDER_ROUTE, which only `OrderTx.writeWithRoute` fills in.
   */
  computed?: Record<string, string>;
}

const MEMBER_NAME = /^[a-z][a-z0-9_]*$/;

@Injectable()
export class OutboxWriter {
  constructor(private readonly config: AppConfig) {}

  get enabled(): boolean {
    return this.config.shopWebhook.url !== null;
  }

  /** Appends events in the transaction of `manager`. One multi-row insert. */
  async append(manager: EntityManager, events: OutboxEvent[]): Promise<void> {
    const insert = this.insert(events);
    if (!insert) return;
    await manager.query(numbered(insert.sql, 1), insert.params);
  }

  /**
   * The multi-row insert of `events` with `$?` placeholders, for a caller that sends it with other
   * writes of its transaction; null when there is nothing to write (no webhook configured, no event).
   */
  insert(events: OutboxEvent[]): { sql: string; params: unknown[] } | null {
    if (!this.enabled || events.length === 0) return null;
    const params: unknown[] = [];
    for (const e of events) params.push(e.type, e.subject, JSON.stringify({ event: e.type, ...e.payload }));
    return {
      sql: `INSERT INTO outbox_events (event_type, subject, payload) VALUES ${events.map((e) => `($?, $?, ${payloadSql(e)})`).join(', ')}`,
      params,
    };
  }
}

/** The payload's SQL: its JSON parameter, with the computed members added by the statement. */
function payloadSql(e: OutboxEvent): string {
  const computed = Object.entries(e.computed ?? {});
  if (computed.length === 0) return '$?::jsonb';
  for (const [name] of computed) if (!MEMBER_NAME.test(name)) throw new Error(`outbox: bad computed member name ${name}`);
  return `($?::jsonb || jsonb_build_object(${computed.map(([name, sql]) => `'${name}', ${sql}`).join(', ')}))`;
}
