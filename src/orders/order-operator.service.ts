/**
 * Operator actions (CONTRACT §5): `refresh` reads the order from the upstream and applies it;
 * `resolve` settles a `submit_unknown` order, either with the upstream order that is this attempt
 * (its `downstream_order_no` checked) or as never placed (`rejected`); and a `rejected` order for
 * which the upstream showed an order (anomaly `upstream_order_exists`) with that upstream order, which
 * it then follows. Both are recorded as events with source `operator`.
 */
import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../common/app-error.js';
import { backoffMs, LOOK_AGAIN } from '../common/backoff.js';
import { Clock } from '../common/clock.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { UpstreamDefinitiveError } from '../upstream/upstream.errors.js';
import type { UpstreamOrder } from '../upstream/upstream.types.js';
import { OrderFollowService } from './order-follow.service.js';
import { UPSTREAM_ORDER_EXISTS, isUpstreamStatus } from './order-state.js';
import type { AttemptRecord, OrderRecord } from './order.records.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderWrites } from './order-writes.repository.js';
import { DomainEvents } from './domain-events.js';
import { OrderSubmitter } from './order-submitter.service.js';
import { OrderUpdater } from './order-updater.service.js';

export type ResolveInput = { upstream_order_id: number } | { not_placed: true; reason: string };

@Injectable()
export class OrderOperatorService {
  constructor(
    private readonly clock: Clock,
    private readonly suppliers: SupplierRegistry,
    private readonly reads: OrderReads,
    private readonly writes: OrderWrites,
    private readonly follow: OrderFollowService,
    private readonly submitter: OrderSubmitter,
    private readonly updater: OrderUpdater,
    private readonly events: DomainEvents,
  ) {}

  async refresh(shopOrderNo: string): Promise<OrderRecord> {
    const order = await this.mustFind(shopOrderNo);
    if (order.upstreamOrderId === null) return order;
    let r = await this.follow.refresh(order.id, 'operator');
    if (r.kind === 'deferred') {
      // A cancel in progress holds the order until the upstream has answered it: the refresh reads the
      // upstream after it (within the cancel's lease), so that it never answers the state from before.
      const held = await this.mustFind(shopOrderNo);
      const deadline = this.clock.nowMs() + Math.max(0, (held.opUntil?.getTime() ?? 0) - this.clock.now().getTime()) + 1000;
      for (let n = 0; r.kind === 'deferred'; n++) {
        if (this.clock.nowMs() > deadline)
          throw new AppError('upstream_unavailable', `a cancel of order ${shopOrderNo} is still in progress; refresh again later`);
        await sleep(backoffMs(n, LOOK_AGAIN));
        r = await this.follow.refresh(order.id, 'operator');
      }
    }
    if (r.kind === 'read_failed') {
      throw new AppError('upstream_unavailable', `the order could not be read from the upstream: ${r.error.message}`);
    }
    const after = r.kind === 'applied' ? r.order : await this.mustFind(shopOrderNo);
    // the action itself is recorded (a status it changed has its own event too)
    await this.writes.addEvent(
      order.id,
      { source: 'operator', kind: 'refresh', from: order.status, to: after.status, detail: { outcome: r.kind } },
      this.clock.now(),
    );
    return after;
  }

  async resolve(shopOrderNo: string, input: ResolveInput): Promise<OrderRecord> {
    const order = await this.mustFind(shopOrderNo);
    if (order.status === 'rejected' && order.anomaly === UPSTREAM_ORDER_EXISTS && 'upstream_order_id' in input)
      return this.adopt(order, input.upstream_order_id);
    if (order.status !== 'submit_unknown') throw this.notUnknown(order);
    const attempt = await this.reads.findAttempt(order.id, order.attempt);
    if (!attempt || attempt.status !== 'submit_unknown') throw this.notUnknown(order);
    const lease = await this.claim(attempt);
    try {
      if ('not_placed' in input) return await this.notPlaced(order, attempt, input.reason);
      const r = await this.follow.resolveUnknown(order.supplier, attempt, input.upstream_order_id, 'operator');
      switch (r.kind) {
        case 'resolved':
          return r.order;
        case 'mismatch':
          throw new AppError('resolve_mismatch', r.reason);
        case 'read_failed':
          throw new AppError('upstream_unavailable', `the upstream order could not be read: ${r.error.message}`);
        case 'not_unknown':
          throw this.notUnknown(r.order ?? order);
      }
    } finally {
      // only its own lease: one that outlived it may be a re-send's by now
      await this.writes.releaseAttemptLease(attempt.id, lease);
      this.events.publish({ type: 'order_settled', orderId: order.id });
    }
  }

  /** Takes the attempt's sending lease, so that no re-send runs while the operator settles it; returns its end. */
  private async claim(attempt: AttemptRecord): Promise<Date> {
    const deadline = this.clock.nowMs() + this.submitter.sendLeaseMs + 1000;
    for (let n = 0; ; n++) {
      const until = await this.writes.claimUnknownAttempt(attempt.id, this.submitter.sendLeaseMs);
      if (until) return until;
      const current = await this.reads.findAttempt(attempt.orderId, attempt.attemptNo);
      if (!current || current.status !== 'submit_unknown') throw this.notUnknown(await this.mustFindById(attempt.orderId));
      if (this.clock.nowMs() > deadline) throw new AppError('upstream_unavailable', 'a re-send of this attempt is in flight; try again');
      await sleep(backoffMs(n, LOOK_AGAIN));
    }
  }

  private async notPlaced(order: OrderRecord, attempt: AttemptRecord, reason: string): Promise<OrderRecord> {
    const now = this.clock.now();
    await this.writes.transaction(async (tx) => {
      const locked = await tx.lockOrder(order.id);
      const current = await tx.lockAttempt(order.id, attempt.attemptNo);
      if (!locked || !current || current.status !== 'submit_unknown' || locked.status !== 'submit_unknown')
        throw this.notUnknown(locked ?? order);
      await tx.updateAttempt(current.id, {
        status: 'rejected',
        sending_until: null,
        finished_at: now,
        error_code: 'not_placed',
        error_message: reason,
      });
      await this.updater.moveLocal(
        tx,
        locked,
        'not_placed',
        'rejected',
        'operator',
        { error_code: 'not_placed', error_message: reason },
        { reason, attempt: attempt.attemptNo },
      );
    });
    return this.mustFind(order.shopOrderNo);
  }

  /**
   * A `rejected` order for which the upstream showed an order (anomaly upstream_order_exists): once
   * the upstream's read of `upstreamOrderId` proves it is one of this order's attempts (its
   * `downstream_order_no`; else the number the signed callback that raised the anomaly carried) and no
   * other order follows it, the order follows it: that attempt accepted, the order in the upstream's
   * status (then followed, refundable only as that status allows), the anomaly cleared.
   */
  private async adopt(order: OrderRecord, upstreamOrderId: number): Promise<OrderRecord> {
    let answer: UpstreamOrder;
    try {
      // the order's supplier's order (ids are each supplier's own)
      answer = await this.suppliers.get(order.supplier).client.getOrder(upstreamOrderId);
    } catch (e) {
      if (e instanceof UpstreamDefinitiveError && e.httpStatus === 404)
        throw new AppError('resolve_mismatch', `the upstream has no order ${upstreamOrderId}`);
      throw new AppError('upstream_unavailable', `the upstream order could not be read: ${(e as Error).message}`);
    }
    const named = (await this.reads.events(order.id)).find((e) => e.kind === 'anomaly' && e.detail?.upstream_order_id === upstreamOrderId)
      ?.detail?.downstream_order_no;
    const dno = answer.downstream_order_no ?? (typeof named === 'string' ? named : undefined);
    const attempt = dno === undefined ? null : await this.reads.findAttemptByDownstreamNo(dno);
    if (!attempt || attempt.orderId !== order.id) {
      throw new AppError(
        'resolve_mismatch',
        `upstream order ${upstreamOrderId} is not one of order ${order.shopOrderNo}'s attempts (downstream_order_no ${dno ?? 'unknown'})`,
      );
    }
    const taken = await this.reads.findByUpstreamId(order.supplier, upstreamOrderId);
    if (taken && taken.id !== order.id)
      throw new AppError('resolve_mismatch', `upstream order ${upstreamOrderId} already belongs to order ${taken.shopOrderNo}`);
    const status = answer.status;
    if (!isUpstreamStatus(status))
      throw new AppError('resolve_mismatch', `upstream order ${upstreamOrderId} is in a status this service does not know (${status})`);
    const now = this.clock.now();
    await this.writes.transaction(async (tx) => {
      const locked = await tx.lockOrder(order.id);
      if (!locked || locked.status !== 'rejected' || locked.anomaly !== UPSTREAM_ORDER_EXISTS) throw this.notUnknown(locked ?? order);
      await tx.updateAttempt(attempt.id, {
        status: 'accepted',
        upstream_order_id: upstreamOrderId,
        finished_at: now,
        error_code: null,
        error_message: null,
      });
      const moved = await this.updater.moveLocal(
        tx,
        locked,
        'adopt',
        status,
        'operator',
        {
          attempt: attempt.attemptNo,
          downstream_order_no: attempt.downstreamOrderNo,
          upstream_order_id: upstreamOrderId,
          upstream_order_no: answer.order_no ?? null,
          anomaly: null,
          error_code: null,
          error_message: null,
        },
        { upstream_order_id: upstreamOrderId, attempt: attempt.attemptNo, downstream_order_no: attempt.downstreamOrderNo },
      );
      // the rest of the upstream's answer (amount, items) as any report of that status
      await this.updater.applyReport(tx, moved, answer, 'operator', { schedule: 'hint', kind: 'read' });
    });
    this.events.publish({ type: 'order_settled', orderId: order.id });
    return this.mustFind(order.shopOrderNo);
  }

  private notUnknown(order: OrderRecord): AppError {
    return new AppError('not_unknown', `order ${order.shopOrderNo} is ${order.status}, not submit_unknown`);
  }

  private async mustFind(shopOrderNo: string): Promise<OrderRecord> {
    const order = await this.reads.findByShopOrderNo(shopOrderNo);
    if (!order) throw new AppError('order_not_found', `no order ${shopOrderNo}`);
    return order;
  }

  private async mustFindById(id: string): Promise<OrderRecord> {
    const order = await this.reads.findById(id);
    if (!order) throw new AppError('order_not_found', `no order ${id}`);
    return order;
  }
}
