/**
 * Cancel and refund, cancel-upstream-first (CONTRACT §5): only the upstream's yes (`canceled`)
 * cancels locally and makes the order refundable; `cancel_not_allowed` and an unreachable upstream
 * leave the local order as it was; an attempt whose outcome is unknown cannot be canceled.
 *
 * No transaction waits on the upstream: a first short transaction marks the order "cancel in
 * progress" (op_token, with a lease), the upstream is called, and a second transaction on the locked
 * row applies the answer and clears the mark. While the mark is set, polls and callbacks leave the
 * order alone (callbacks wait in the inbox and are applied after), so nothing slips between the
 * upstream's answer and the local write.
 */
import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../common/app-error.js';
import { backoffMs, LOOK_AGAIN } from '../common/backoff.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { UpstreamDefinitiveError, UpstreamRetryableError } from '../upstream/upstream.errors.js';
import type { UpstreamOrder } from '../upstream/upstream.types.js';
import { canceledQueuedAttempt, cancelRoute, planLocalCancel } from './cancel-plan.js';
import { CANCELED_AFTER_DELIVERY, OUTCOME_UNKNOWN, UPSTREAM_ORDER_EXISTS } from './order-state.js';
import { orderRefund } from './order.mapper.js';
import { OrderPresenter } from './order-presenter.service.js';
import type { OrderRecord } from './order.records.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderWrites } from './order-writes.repository.js';
import { DomainEvents } from './domain-events.js';
import { OrderUpdater } from './order-updater.service.js';

type UpstreamCancelAnswer =
  | { kind: 'canceled' }
  /** refused; `current` is the order as read right after (null when that read failed) */
  | { kind: 'not_allowed'; current: UpstreamOrder | null }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'unknown'; reason: string }
  | { kind: 'error'; error: UpstreamDefinitiveError };

/** A refund judged again this many times when the order keeps moving under it (then refused as it is). */
const MAX_REFUND_TRIES = 5;

@Injectable()
export class OrderCancelService {
  private readonly logger = new Logger('orders');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly suppliers: SupplierRegistry,
    private readonly reads: OrderReads,
    private readonly writes: OrderWrites,
    private readonly updater: OrderUpdater,
    private readonly presenter: OrderPresenter,
    private readonly events: DomainEvents,
  ) {}

  /** How long a cancel may hold its mark: the cancel call and one read, each within the timeout. */
  get opLeaseMs(): number {
    return 2 * this.config.upstream.timeoutMs + 1000;
  }

  async cancel(shopOrderNo: string): Promise<OrderRecord> {
    const deadline = this.clock.nowMs() + this.opLeaseMs + 1000;
    for (let n = 0; ; n++) {
      const order = await this.mustFind(shopOrderNo);
      // the route (cancel-plan.ts): refused while the outcome is unknown, done, local, or upstream first
      const route = cancelRoute(order.status);
      if (route === 'outcome_unknown') throw this.outcomeUnknown(order);
      if (route === 'already') return order;
      if (route === 'local') {
        const canceled = await this.cancelLocally(order);
        if (canceled) return canceled;
        continue; // a new attempt took the order meanwhile: its status decides, read again
      }
      const token = randomUUID();
      const begun = await this.begin(order, token);
      if (begun === 'changed') continue;
      if (begun === 'busy') {
        // another cancel of this order is in progress: wait for it, then answer from what it left
        if (this.clock.nowMs() > deadline)
          throw new AppError('upstream_unavailable', `a cancel of order ${shopOrderNo} is still in progress`);
        await sleep(backoffMs(n, LOOK_AGAIN));
        continue;
      }
      try {
        const answer = await this.askUpstream(order);
        return await this.finish(order, token, answer);
      } finally {
        this.events.publish({ type: 'order_settled', orderId: order.id });
      }
    }
  }

  async refund(shopOrderNo: string): Promise<OrderRecord> {
    for (let tries = 1; ; tries++) {
      let order = await this.mustFind(shopOrderNo);
      if (order.refundAt !== null) return order;
      if (OUTCOME_UNKNOWN.has(order.status)) throw this.outcomeUnknown(order);
      if (orderRefund(order).state !== 'refundable') order = await this.cancel(shopOrderNo);
      const decided = order;
      const now = this.clock.now();
      const done = await this.writes.transaction(async (tx) => {
        const locked = await tx.lockOrder(decided.id);
        if (!locked || locked.refundAt !== null) return true;
        const eligibility = orderRefund(locked);
        if (eligibility.state !== 'refundable') {
          // moved since it was judged (a new attempt of a rejected order, say): judged again, so that
          // an order the upstream has is canceled there first, or refused for what it now is
          if (locked.status !== decided.status && tries < MAX_REFUND_TRIES) return false;
          throw new AppError('cancel_not_allowed', `order ${shopOrderNo} is ${locked.status}: not refundable`, {
            order: this.presenter.present(locked),
          });
        }
        // the row lock serialises refunds of an order; the unique row is the last guard
        if (!(await tx.insertRefund(locked.id, eligibility.amount, locked.currency, now))) return true;
        await tx.insertEvent(
          locked.id,
          { source: 'api', kind: 'refund', from: locked.status, to: locked.status, detail: { amount: eligibility.amount } },
          now,
        );
        await tx.updateOrder(locked, { updated_at: now });
        this.logger.log({
          msg: `order ${shopOrderNo}: refund recorded (${eligibility.amount ?? '-'})`,
          shop_order_no: shopOrderNo,
          trace_id: locked.traceId,
        });
        return true;
      });
      if (done) return this.mustFind(shopOrderNo);
    }
  }

  private async mustFind(shopOrderNo: string): Promise<OrderRecord> {
    const order = await this.reads.findByShopOrderNo(shopOrderNo);
    if (!order) throw new AppError('order_not_found', `no order ${shopOrderNo}`);
    return order;
  }

  private outcomeUnknown(order: OrderRecord): AppError {
    return new AppError('outcome_unknown', `order ${order.shopOrderNo} is ${order.status}: whether the upstream has it is not known yet`, {
      order: this.presenter.present(order),
    });
  }

  /**
   * Nothing exists upstream for a rejected or queued attempt: canceled here, still refundable (a queued
   * attempt is closed, never to be sent). Unless the upstream
   * showed an order for it (UPSTREAM_ORDER_EXISTS): that one is not ours to cancel here. Null when the
   * order is no longer `rejected` or `queued` under the lock (a new attempt took it, the queue sent it,
   * an operator adopted an upstream order): the caller decides again from what it is now.
   */
  private async cancelLocally(order: OrderRecord): Promise<OrderRecord | null> {
    const moved = await this.writes.transaction(async (tx) => {
      const locked = await tx.lockOrder(order.id);
      if (!locked) return false;
      // the local move (cancel-plan.ts, from the state table's `local_cancel` moves); this carries it out
      const plan = planLocalCancel(locked);
      switch (plan.kind) {
        case 'refuse_upstream_order_exists':
          throw new AppError(
            'cancel_not_allowed',
            `an upstream order exists for order ${locked.shopOrderNo} (anomaly ${UPSTREAM_ORDER_EXISTS}): an operator settles it`,
            {
              order: this.presenter.present(locked),
            },
          );
        case 'already':
          return false;
        case 'decide_again':
          return true;
        case 'move':
          if (plan.closeQueuedAttempt) {
            const attempt = await tx.lockAttempt(locked.id, locked.attempt);
            if (attempt?.status === 'queued') await tx.updateAttempt(attempt.id, canceledQueuedAttempt(this.clock.now()));
          }
          await this.updater.moveLocal(tx, locked, 'local_cancel', plan.to, 'api');
          return false;
      }
    });
    return moved ? null : this.mustFind(order.shopOrderNo);
  }

  /** First transaction: the "cancel in progress" mark. */
  private async begin(order: OrderRecord, token: string): Promise<'begun' | 'busy' | 'changed'> {
    return this.writes.transaction(async (tx) => {
      const locked = await tx.lockOrder(order.id);
      if (!locked || locked.status !== order.status || locked.upstreamOrderId === null) return 'changed';
      const now = this.clock.now();
      if (locked.opToken !== null && locked.opUntil !== null && locked.opUntil > now) return 'busy';
      await tx.updateOrder(locked, { op_kind: 'cancel', op_token: token, op_until: new Date(now.getTime() + this.opLeaseMs) });
      return 'begun';
    });
  }

  private async askUpstream(order: OrderRecord): Promise<UpstreamCancelAnswer> {
    const id = order.upstreamOrderId as number;
    // the supplier holding the order is asked, enabled or not
    const upstream = this.suppliers.get(order.supplier).client;
    try {
      const answer = await upstream.cancelOrder(id);
      if (answer.status === 'canceled') return { kind: 'canceled' };
      // an answer that does not say `canceled` is not the yes a refund needs: what the order is now decides
      return { kind: 'not_allowed', current: await upstream.getOrder(id).catch(() => null) };
    } catch (e) {
      if (e instanceof UpstreamDefinitiveError) {
        if (e.errorCode !== 'cancel_not_allowed') return { kind: 'error', error: e };
        // refused: it may already be canceled (an earlier cancel whose answer was lost)
        const current = await upstream.getOrder(id).catch(() => null);
        return { kind: 'not_allowed', current };
      }
      if (e instanceof UpstreamRetryableError) return { kind: 'unreachable', reason: e.reason };
      return { kind: 'unknown', reason: e instanceof Error ? e.message : String(e) };
    }
  }

  /** Second transaction: apply the upstream's answer on the locked row and clear the mark. */
  private async finish(order: OrderRecord, token: string, answer: UpstreamCancelAnswer): Promise<OrderRecord> {
    const now = this.clock.now();
    await this.writes.transaction(async (tx) => {
      const locked = await tx.lockOrder(order.id);
      if (!locked) return;
      const mine = locked.opToken === token;
      if (answer.kind === 'canceled' || (answer.kind === 'not_allowed' && answer.current?.status === 'canceled')) {
        await this.updater.applyReport(
          tx,
          locked,
          answer.kind === 'canceled' ? { status: 'canceled' } : (answer.current as UpstreamOrder),
          'api',
          {
            schedule: 'hint',
            kind: answer.kind === 'canceled' ? 'answer' : 'read',
            patch: mine ? { op_kind: null, op_token: null, op_until: null } : {},
            detail: { action: 'cancel' },
          },
        );
        return;
      }
      await tx.updateOrder(locked, {
        ...(mine ? { op_kind: null, op_token: null, op_until: null } : {}),
        // no answer: the upstream's state is read soon by the poller
        ...(answer.kind === 'unknown' && locked.nextPollAt !== null ? { next_poll_at: now } : {}),
      });
    });
    const updated = await this.mustFind(order.shopOrderNo);
    switch (answer.kind) {
      case 'canceled':
        // the upstream canceled an order whose items were delivered: not canceled here (an anomaly,
        // logged), so no refund follows: the shop must not take the 200 of a cancel for it
        if (updated.status !== 'canceled' && updated.anomaly === CANCELED_AFTER_DELIVERY) {
          throw new AppError(
            'cancel_not_allowed',
            `the upstream canceled order ${order.shopOrderNo} after its items were delivered: kept as an anomaly, not canceled here`,
            {
              order: this.presenter.present(updated),
            },
          );
        }
        return updated;
      case 'not_allowed':
        if (updated.status === 'canceled') return updated;
        throw new AppError('cancel_not_allowed', `the upstream does not allow canceling order ${order.shopOrderNo} now`, {
          order: this.presenter.present(updated),
        });
      case 'unreachable':
        throw new AppError('upstream_unavailable', `the upstream could not be reached (${answer.reason}); the order is unchanged`, {
          order: this.presenter.present(updated),
        });
      case 'unknown':
        throw new AppError(
          'upstream_unavailable',
          `no answer from the upstream to the cancel (${answer.reason}); the order is unchanged until the upstream's state is read`,
          {
            order: this.presenter.present(updated),
          },
        );
      case 'error': {
        const auth = answer.error.httpStatus === 401 || answer.error.httpStatus === 403;
        throw new AppError(auth ? 'upstream_auth_failed' : 'upstream_error', `the upstream refused the cancel: ${answer.error.errorCode}`, {
          order: this.presenter.present(updated),
        });
      }
    }
  }
}
