/**
 * Writes shop notifications into the outbox inside the caller's transaction, so an event exists
 * exactly when the change it announces was committed. Without SHOP_WEBHOOK_URL nothing is written.
 */
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config.js';

export type OutboxEventType =
  | 'order.status_changed'
  | 'sku.price_changed'
  | 'sku.stock_changed'
  | 'sku.listing_changed'
  | 'alert.wallet_low'
  | 'alert.order_stuck'
  | 'alert.sync_failed';

export interface OutboxEvent {
  type: OutboxEventType;
  /** A shop_order_no, a sku_code, or an alert key. */
  subject: string;
  payload: Record<string, unknown>;
}

@Injectable()
export class OutboxWriter {
  constructor(private readonly config: AppConfig) {}

  get enabled(): boolean {
    return this.config.shopWebhook.url !== null;
  }

  /** Appends events in the transaction of `manager`. One multi-row insert. */
  async append(manager: EntityManager, events: OutboxEvent[]): Promise<void> {
    if (!this.enabled || events.length === 0) return;
    const values: string[] = [];
    const params: unknown[] = [];
    for (const e of events) {
      values.push(`($${params.length + 1}, $${params.length + 2}, $${params.length + 3}::jsonb)`);
      params.push(e.type, e.subject, JSON.stringify({ event: e.type, ...e.payload }));
    }
    await manager.query(`INSERT INTO outbox_events (event_type, subject, payload) VALUES ${values.join(', ')}`, params);
  }
}
