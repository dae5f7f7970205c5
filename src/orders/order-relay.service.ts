/**
 * Placing an order (CONTRACT §5 `POST /internal/orders`):
 * 1. the same `shop_order_no`: the recorded order (200), 409 for another body, or a wait for the
 *    attempt in flight; a `rejected` order with the same body gets a new attempt (place-plan.ts
 *    `checkSameRequest`, `canResubmit`), at an enabled supplier only (`checkSupplierOpen`);
 * 2. the checks before sending, nothing recorded when they fail, then the price guard (PriceGuard:
 *    a head-start or fresh `GET /products/{id}`, or the SKU's cost as a create for it confirmed it
 *    within ORDER_PRICE_FRESH_S);
 * 3. the attempt reserved in one short transaction (unique shop_order_no, unique downstream_order_no,
 *    one open attempt per order; a new order is a single statement), committed before the create
 *    call, which is made outside it; the outcome recorded after it.
 *
 * Under the upstream's request budget (UPSTREAM_RATE_LIMIT) the price read and the create wait for
 * their tokens at most ORDER_QUEUE_WAIT_MS in all (with the budget off, only for the end of a block
 * this process met): past that, or on a 429 (with or without a budget), the order is answered 202
 * `queued`, its attempt reserved but not sent, and QueuedOrderSender (driven by OrderQueue) sends it
 * later in arrival order, under the same number, with the price guard read then against the ceiling
 * recorded at acceptance.
 *
 * An offer order's source (OfferPlacement) is placed here as any order; one that its route refused
 * before any request (`refusal`) is recorded as an attempt rejected before sending, followed as any
 * refusal (OfferFailover).
 */
import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../common/app-error.js';
import { backoffMs, LOOK_AGAIN } from '../common/backoff.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { CatalogService, type CatalogSku } from '../catalog/catalog.service.js';
import { passesOverBeforeSending } from '../offers/offer-route.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import {
  canResubmit,
  checkQuantity,
  checkSameRequest,
  checkSupplierOpen,
  expectedAmount,
  pickSupplier,
  placeAnswer,
  priceCeiling,
  refuse,
} from './place-plan.js';
import { OrderPresenter } from './order-presenter.service.js';
import { downstreamOrderNo, requestFingerprint, type PlaceOrderInput } from './order-request.js';
import type { AttemptRecord, AttemptRequest, OrderRecord } from './order.records.js';
import { DownstreamNumberTaken, type OrderSnapshot, type OrderTx } from './order-tx.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderWrites } from './order-writes.repository.js';
import { DomainEvents } from './domain-events.js';
import { OrderSubmitter, type SendOutcome } from './order-submitter.service.js';
import { OfferFailover, type RefusalFollowUp } from './offer-failover.service.js';
import { OrderUpdater } from './order-updater.service.js';
import {
  localChecked,
  PriceGuard,
  waitLeft,
  type BudgetWait,
  type CheckedSku,
  type EarlyRead,
  type PriceCheck,
} from './price-guard.service.js';
import { QueuedOrderSender } from './queued-order-sender.service.js';
import { mayCloseRejected } from './attempt-plan.js';

export interface PlaceResult {
  /** 201 accepted, 202 outcome unknown, 200 the recorded order. */
  httpStatus: 200 | 201 | 202;
  order: OrderRecord;
}

/** At most this many order numbers are remembered as recorded (then they start over). */
const RECENT_NUMBERS = 20_000;

@Injectable()
export class OrderRelayService {
  /** Placements in flight in this process, by shop_order_no: other requests with the key wait for them. */
  private readonly inflight = new Map<string, Promise<unknown>>();
  /** Order numbers recorded lately, as this process saw them (see placeOrReplay). */
  private readonly recorded = new Set<string>();

  private readonly logger = new Logger('orders');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly reads: OrderReads,
    private readonly writes: OrderWrites,
    private readonly catalog: CatalogService,
    private readonly submitter: OrderSubmitter,
    private readonly updater: OrderUpdater,
    private readonly presenter: OrderPresenter,
    private readonly events: DomainEvents,
    private readonly suppliers: SupplierRegistry,
    private readonly failover: OfferFailover,
    private readonly guard: PriceGuard,
    private readonly queued: QueuedOrderSender,
  ) {}

  /**
   * `refusal`: an offer order's source that its route refuses without a request (OfferPlacement; its
   * supplier may be disabled or unknown): recorded as an attempt rejected before sending, and followed
   * as any refusal.
   */
  async place(input: PlaceOrderInput, refusal?: AppError): Promise<PlaceResult> {
    refuse(checkQuantity(input.quantity, this.config.orders.maxQuantity));
    // a supplier named must exist (404 supplier_not_found), whatever else the body says
    if (input.supplier !== undefined && !refusal) await this.suppliers.resolve(input.supplier);
    const fingerprint = requestFingerprint(input);
    // the price read and the create wait for the request budget (or, with it off, for the end of a
    // block after a 429) this long in all
    const wait: BudgetWait = { deadline: performance.now() + this.config.budget.orderQueueWaitMs };
    for (;;) {
      // One request per key at a time in this process: the others wait for it, then answer from
      // what it recorded (replicas meet at the unique keys of the database instead).
      const running = this.inflight.get(input.shop_order_no);
      if (running) {
        await running.catch(() => undefined);
        const after = await this.reads.findByShopOrderNo(input.shop_order_no);
        if (after) return this.answerWaiter(await this.waitSettled(after), fingerprint);
        continue; // it recorded nothing (a check failed): make our own checks
      }
      const placing = this.placeOrReplay(input, fingerprint, wait, refusal);
      this.inflight.set(input.shop_order_no, placing);
      try {
        const result = await placing;
        if (result) return result;
      } finally {
        if (this.inflight.get(input.shop_order_no) === placing) this.inflight.delete(input.shop_order_no);
      }
      // lost a race with another replica: look again
    }
  }

  /** The recorded order, a wait for its attempt in flight, or a new attempt (new order, or after `rejected`). */
  private async placeOrReplay(
    input: PlaceOrderInput,
    fingerprint: string,
    wait: BudgetWait,
    refusal?: AppError,
  ): Promise<PlaceResult | null> {
    // The price guard's head-start read (PriceGuard.startEarlyRead); none for a number recorded lately in
    // this process (a replay most likely), nor for a source the route refused (nothing is asked of it).
    const early =
      this.recorded.has(input.shop_order_no) || refusal ? null : this.guard.startEarlyRead(input.sku_code, input.supplier, wait);
    // One statement: the SKU (a new order, the usual case, needs it), at the supplier named or at
    // every supplier, and whether the number is recorded; a replay then reads its order. (An order
    // recorded by another replica after this read meets the reservation's unique key: `reserve` gives
    // null and `place` looks again.)
    const { found, orderRecorded } = await this.reads.findSkuForOrder(input.sku_code, input.shop_order_no, input.supplier ?? null);
    if (orderRecorded) this.remember(input.shop_order_no);
    const existing = orderRecorded ? await this.reads.findByShopOrderNo(input.shop_order_no) : null;
    if (existing) {
      refuse(checkSameRequest(existing, fingerprint));
      if (existing.status === 'submitting') return this.answerWaiter(await this.waitSettled(existing), fingerprint);
      // no new attempt once refunded, nor while the upstream shows an order placed for an attempt we closed
      if (!canResubmit({ status: existing.status, refundRecorded: existing.refundAt !== null, anomaly: existing.anomaly }))
        return { httpStatus: 200, order: existing };
    }
    // The supplier: the one named, else a new attempt's order's, else the one whose SKUs the reference
    // names; a reference SKUs of several suppliers answer to is refused (nothing recorded), never a guess.
    const within = input.supplier ?? existing?.supplier;
    const pick = pickSupplier(input.sku_code, within !== undefined ? found.filter((f) => f.supplier === within) : found);
    if (pick.kind === 'ambiguous') {
      const suppliers = new Set(pick.candidates.map((c) => c.supplier)).size;
      throw new AppError('sku_ambiguous', `${input.sku_code} names SKUs of ${suppliers} suppliers: name the supplier (and its sku_key)`, {
        candidates: pick.candidates,
      });
    }
    const supplier = input.supplier ?? existing?.supplier ?? pick.supplier ?? this.suppliers.envName;
    const { sku, refused } = this.catalog.skuForOrder(input.sku_code, pick.found, input.supplier);
    // A code several SKUs of the supplier carry: refused for a new attempt, never a guess.
    if (refused) throw refused;
    // a new attempt goes to an enabled supplier only (an unknown one is 404 supplier_not_found), unless
    // its route refused the source already (place-plan.ts checkSupplierOpen)
    const enabled = refusal ? (this.suppliers.find(supplier)?.config.enabled ?? false) : this.suppliers.get(supplier).config.enabled;
    refuse(checkSupplierOpen(supplier, enabled, refusal !== undefined));
    return this.placeAttempt(input, supplier, fingerprint, existing, sku, early, wait, refusal);
  }

  /** A number recorded (placed here, or found recorded): a request with it again is a replay. */
  private remember(shopOrderNo: string): void {
    if (this.recorded.size >= RECENT_NUMBERS) this.recorded.clear();
    this.recorded.add(shopOrderNo);
  }

  private answerWaiter(order: OrderRecord, fingerprint: string): PlaceResult {
    refuse(checkSameRequest(order, fingerprint));
    return { httpStatus: 200, order };
  }

  /** Waits for an attempt in flight elsewhere (another request, another replica) to settle. */
  private async waitSettled(order: OrderRecord): Promise<OrderRecord> {
    const deadline = this.clock.nowMs() + this.submitter.sendLeaseMs + 2 * this.config.upstream.timeoutMs;
    let current = order;
    for (let n = 0; current.status === 'submitting' && this.clock.nowMs() < deadline; n++) {
      await sleep(backoffMs(n, LOOK_AGAIN));
      current = (await this.reads.findById(order.id)) ?? current;
    }
    return current;
  }

  /** Checks, reserves and sends one attempt; null when another request took the key meanwhile. */
  private async placeAttempt(
    input: PlaceOrderInput,
    supplier: string,
    fingerprint: string,
    rejected: OrderRecord | null,
    local: CatalogSku | null,
    early: EarlyRead | null,
    wait: BudgetWait,
    refusal?: AppError,
  ): Promise<PlaceResult | null> {
    const ceiling = priceCeiling(input.max_unit_cost ?? input.ceiling, local?.salePrice);
    let checked: PriceCheck;
    try {
      if (refusal) throw refusal;
      checked = await this.guard.check(input, supplier, local, early, ceiling, wait);
    } catch (e) {
      // an offer order's source refused before sending is an attempt of its route (CONTRACT §11); a
      // direct order's refusal records nothing (§5)
      if (input.offer === undefined || local === null || !(e instanceof AppError) || !passesOverBeforeSending(e.code)) throw e;
      return this.refuseBeforeSending(input, supplier, fingerprint, rejected, local, ceiling, e);
    }
    // deferred: queued as the local catalog knows the SKU (check refuses an unknown one), read when sent
    const deferred = checked.kind === 'deferred';
    const sku: CheckedSku =
      checked.kind === 'checked' ? checked.sku : localChecked(checked.local, checked.local.upstreamSkuId, checked.local.costPrice);
    const { traceId, request } = this.attemptRequest(input, supplier, rejected, sku);
    const reserved = await this.reserve(
      input,
      supplier,
      fingerprint,
      rejected,
      sku,
      request,
      traceId,
      ceiling,
      deferred ? 'queued' : 'submitting',
    );
    if (!reserved) return null;
    this.remember(input.shop_order_no);
    const { order, attempt, snapshot } = reserved;
    if (deferred) {
      this.announceQueued(order, 'budget_wait_exceeded');
      return { httpStatus: 202, order };
    }
    const outcome = await this.submitter.send(
      supplier,
      attempt.downstreamOrderNo,
      request,
      { shop_order_no: order.shopOrderNo },
      { maxWaitMs: waitLeft(wait) },
    );
    this.guard.noteOutcome(supplier, sku, input.quantity, outcome);
    // an offer order's failover (its route planned again) only for an outcome that can be a refusal: an
    // order placed is recorded without it (and, with a snapshot, in one statement)
    const onRefused = mayCloseRejected(outcome.kind) ? await this.offerFollowUp(input, supplier, rejected, sku.skuKey) : undefined;
    const recorded = await this.submitter.record(order.id, attempt.attemptNo, outcome, 'api', snapshot ?? undefined, onRefused);
    this.failover.noteTaken(recorded, attempt.attemptNo);
    if (outcome.kind === 'queued' && recorded.status === 'queued') this.announceQueued(recorded, outcome.reason);
    return this.answer(recorded, outcome);
  }

  /** A new attempt's request and trace id. */
  private attemptRequest(
    input: PlaceOrderInput,
    supplier: string,
    rejected: OrderRecord | null,
    sku: CheckedSku,
  ): { traceId: string; request: AttemptRequest } {
    const traceId = rejected?.traceId ?? input.trace_id ?? randomUUID();
    // A manual order without data sends an empty form: nothing to the upstream's check (Dujiao-Next
    // takes `{}` as no submission), and present where an upstream requires the member (upstream-api.md).
    const form = input.manual_form_data ?? (sku.fulfillmentType === 'manual' ? {} : undefined);
    const request: AttemptRequest = {
      sku_id: sku.skuId,
      quantity: input.quantity,
      ...(form !== undefined ? { manual_form_data: form } : {}),
      trace_id: traceId,
      with_callback: this.submitter.withCallback(supplier),
    };
    return { traceId, request };
  }

  /** The failover of a new attempt of an offer order (it begins a pass through the route); undefined for a direct order. */
  private offerFollowUp(
    input: PlaceOrderInput,
    supplier: string,
    rejected: OrderRecord | null,
    skuKey: string,
  ): Promise<RefusalFollowUp | undefined> {
    return this.failover.followUp(
      {
        offer: input.offer ?? null,
        orderId: null,
        passStart: rejected ? rejected.attempt + 1 : 1,
        current: { supplier, sku_key: skuKey },
        shopOrderNo: input.shop_order_no,
        maxUnitCost: input.max_unit_cost ?? null,
        ...(input.manual_form_data !== undefined ? { manualFormData: input.manual_form_data } : {}),
      },
      (s) => this.submitter.withCallback(s),
    );
  }

  /**
   * An offer order's source refused before anything was sent (the price guard, a pre-send check, its
   * product unreadable): its attempt is reserved and closed `rejected` with the refusal's code in one
   * transaction, with the failover's next attempt reserved there too. 202 with the order queued at
   * the next source (the caller sends it), else the refusal with the `rejected` order.
   */
  private async refuseBeforeSending(
    input: PlaceOrderInput,
    supplier: string,
    fingerprint: string,
    rejected: OrderRecord | null,
    local: CatalogSku,
    ceiling: string,
    e: AppError,
  ): Promise<PlaceResult | null> {
    const sku = localChecked(local, local.upstreamSkuId, local.costPrice);
    const { traceId, request } = this.attemptRequest(input, supplier, rejected, sku);
    const onRefused = await this.offerFollowUp(input, supplier, rejected, sku.skuKey);
    const reserved = await this.reserve(
      input,
      supplier,
      fingerprint,
      rejected,
      sku,
      request,
      traceId,
      ceiling,
      'queued',
      (tx, order, attemptId) => this.queued.refuseInTx(tx, order, attemptId, e, onRefused),
    );
    if (!reserved) return null;
    this.remember(input.shop_order_no);
    this.logRefusedBeforeSending(reserved.order, supplier, e);
    if (reserved.order.status !== 'rejected') return { httpStatus: 202, order: reserved.order };
    throw AppError.fromUpstream(e.code, e.httpStatus, e.message, { ...e.extra, order: this.presenter.present(reserved.order) });
  }

  private logRefusedBeforeSending(order: OrderRecord, supplier: string, e: AppError): void {
    this.logger.warn({
      msg: `order ${order.shopOrderNo}: refused at ${supplier} before sending (${e.code}): ${e.message}`,
      shop_order_no: order.shopOrderNo,
      trace_id: order.traceId,
      supplier,
      error_code: e.code,
    });
  }

  private announceQueued(order: OrderRecord, reason: string): void {
    this.logger.log({
      msg: `order ${order.shopOrderNo}: queued for the upstream's request budget (${reason})`,
      shop_order_no: order.shopOrderNo,
      trace_id: order.traceId,
      reason,
    });
    this.events.publish({ type: 'order_queued', orderId: order.id });
  }

  /**
   * The attempt row, reserved before the HTTP call; with the snapshot the outcome is written from when
   * it is a new order (a resubmission's outcome goes through a transaction).
   */
  private async reserve(
    input: PlaceOrderInput,
    supplier: string,
    fingerprint: string,
    rejected: OrderRecord | null,
    sku: CheckedSku,
    request: AttemptRequest,
    traceId: string,
    ceiling: string,
    status: 'submitting' | 'queued',
    then?: (tx: OrderTx, order: OrderRecord, attemptId: string) => Promise<OrderRecord>,
  ): Promise<{ order: OrderRecord; attempt: AttemptRecord; snapshot: OrderSnapshot | null } | null> {
    const now = this.clock.now();
    const leaseMs = this.submitter.sendLeaseMs;
    const expected = expectedAmount(sku.unitCost, input.quantity);
    // A new order is one statement (order, attempt and event in one INSERT): on its own, committed as
    // it returns, when there is no outbox row to write with it; else in a transaction with that row.
    // (`then`: more of the same transaction on the reserved order and attempt)
    const alone = !rejected && !this.updater.announceWrites && !then;
    const run = <T>(fn: (tx: OrderTx) => Promise<T>): Promise<T> => (alone ? this.writes.autocommit(fn) : this.writes.transaction(fn));
    try {
      return await run(async (tx) => {
        if (!rejected) {
          const created = await tx.insertOrder(
            {
              shopOrderNo: input.shop_order_no,
              supplier,
              skuCode: input.sku_code,
              skuKey: sku.skuKey,
              offer: input.offer ?? null,
              quantity: input.quantity,
              requestFingerprint: fingerprint,
              maxUnitCost: input.max_unit_cost ?? null,
              priceCeiling: ceiling,
              traceId,
              productId: sku.productId,
              skuId: sku.skuId,
              unitCost: sku.unitCost,
              expectedAmount: expected,
              currency: sku.currency,
              fulfillmentType: sku.fulfillmentType,
            },
            request,
            now,
            leaseMs,
            status,
          );
          if (created) await this.updater.announce(tx, created.order, null, status, 'api', now);
          if (created && then)
            return { order: await then(tx, created.order, created.attempt.id), attempt: created.attempt, snapshot: null };
          return created && { order: created.order, attempt: created.attempt, snapshot: created };
        }
        const order = await tx.lockOrder(rejected.id);
        if (
          !order ||
          !canResubmit({ status: order.status, refundRecorded: order.refundAt !== null, anomaly: order.anomaly }) ||
          order.attempt !== rejected.attempt ||
          order.requestFingerprint !== fingerprint
        ) {
          return null;
        }
        const n = order.attempt + 1;
        const dno = downstreamOrderNo(order.shopOrderNo, n);
        // an offer order's new attempt may go to another source's supplier (CONTRACT §11)
        const attempt = await tx.insertAttempt(order.id, n, dno, request, now, leaseMs, status, { supplier, skuKey: sku.skuKey });
        const patch = {
          supplier,
          attempt: n,
          downstream_order_no: dno,
          sku_key: sku.skuKey,
          product_id: sku.productId,
          sku_id: sku.skuId,
          unit_cost: sku.unitCost,
          expected_amount: expected,
          price_ceiling: ceiling,
          error_code: null,
          error_message: null,
        };
        const updated = await this.updater.moveLocal(tx, { ...order, attempt: n, supplier }, 'resubmit', status, 'api', patch, {
          attempt: n,
          downstream_order_no: dno,
        });
        return { order: then ? await then(tx, updated, attempt.id) : updated, attempt, snapshot: null };
      });
    } catch (e) {
      if (e instanceof DownstreamNumberTaken) {
        throw new AppError('idempotency_conflict', `the upstream order number ${e.downstreamOrderNo} is already used by another order`);
      }
      throw e;
    }
  }

  /** The answer of the request that made the attempt (place-plan.ts `placeAnswer`); an error carries the order. */
  private answer(order: OrderRecord, outcome: SendOutcome): PlaceResult {
    const a = placeAnswer(order, outcome);
    if (a.kind === 'ok') return { httpStatus: a.httpStatus, order };
    const extra = { order: this.presenter.present(order) };
    throw a.upstream ? AppError.fromUpstream(a.code, a.httpStatus, a.message, extra) : new AppError(a.code, a.message, extra);
  }
}
