/**
 * The failover of an order placed through an offer (CONTRACT §11), one rule for whoever sends its
 * attempt (the request that placed it, OfferPlacement, or the queue, QueuedOrderSender.placeQueued):
 * when an attempt ends with a definitive refusal before any charge, the next untried source is
 * reserved as the order's next attempt (`queued` at that source's supplier) IN THE TRANSACTION that
 * records the refusal, so that a crash after its commit leaves that attempt for the queue.
 *
 * `followUp` prepares, before the attempt's outcome is recorded (outside any transaction), the route
 * planned again from the order's offer (offer-route.ts `planRoute`: the suppliers' state now, the
 * ceiling `max_unit_cost`, else the offer's sale price), the sources this pass already tried (its
 * attempts since the one its pass began with), and the local SKUs of the sources ahead; the returned
 * `RefusalFollowUp` decides with the refusal (offer-failover.ts `nextOfferStep`) inside the recording
 * transaction. The sources ahead that the route refuses without a request (above the ceiling; every
 * source, when the route meets none that could take the order) are recorded there as attempts
 * rejected before sending, each with its code (`price_changed`, `sku_unavailable`, `supplier_disabled`,
 * `supplier_not_found`), so that the route shows every source met. A source whose supplier's key is
 * blocked is met after the others: its attempt is reserved `queued` and sent when the block ends.
 * Nothing follows `submit_unknown`, a placement, a queued attempt (a budget is not a refusal) or a
 * refusal the route does not pass over.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { CatalogService, type CatalogSku } from '../catalog/catalog.service.js';
import { AppConfig } from '../config/app-config.js';
import { nextOfferStep, type SourceRef } from '../offers/offer-failover.js';
import { planRoute, refusalMessage, routeCeiling, type RouteSource, type RouteStep, type SupplierState } from '../offers/offer-route.js';
import { OfferRepository, type OfferRecord } from '../offers/offer.repository.js';
import { Metrics } from '../ops/metrics.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { expectedAmount, priceCeiling } from './place-plan.js';
import { downstreamOrderNo } from './order-request.js';
import type { AttemptRequest, OrderRecord } from './order.records.js';
import type { OrderTx } from './order-tx.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderUpdater } from './order-updater.service.js';
import { sendLeaseMs } from './attempt-plan.js';

/**
 * What follows a refusal of an attempt, in the transaction recording it: `code` is the refusal as
 * CONTRACT §5 names it (`upstream_auth_failed` for a 401/403), `sent` whether a create may have reached
 * the upstream. Returns the order as it then is, or null when nothing follows.
 */
export type RefusalFollowUp = (tx: OrderTx, rejected: OrderRecord, code: string | null, sent: boolean) => Promise<OrderRecord | null>;

/** The attempt whose refusal is followed. */
export interface FailoverPoint {
  /** The order's offer (null: a direct order, nothing follows). */
  offer: string | null;
  /** The recorded order (null: its first attempt, not recorded yet). */
  orderId: string | null;
  /** The attempt this pass through the route began with (the attempt itself when it begins one). */
  passStart: number;
  /** The source of the attempt. */
  current: SourceRef;
  shopOrderNo: string;
  maxUnitCost: string | null;
  manualFormData?: Record<string, unknown>;
}

/** The route as planned now for an offer. */
export interface PlannedRoute {
  steps: RouteStep[];
  /** `max_unit_cost`, else the offer's sale price. */
  ceiling: string | null;
}

@Injectable()
export class OfferFailover {
  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly offers: OfferRepository,
    private readonly suppliers: SupplierRegistry,
    private readonly reads: OrderReads,
    private readonly catalog: CatalogService,
    private readonly updater: OrderUpdater,
    private readonly metrics: Metrics,
  ) {}

  /** The route through `offer` as planned now: its sources with their local view, the suppliers' state, the ceiling. */
  async plan(offer: OfferRecord, maxUnitCost: string | null | undefined): Promise<PlannedRoute> {
    const sources = (await this.offers.sourcesOf(this.dataSource.manager, [offer.code])).get(offer.code) ?? [];
    const states = new Map<string, SupplierState>();
    for (const name of new Set(sources.map((s) => s.supplier))) {
      const runtime = this.suppliers.find(name);
      if (!runtime) continue;
      const until = runtime.config.enabled ? await runtime.budget.blockedUntil() : null;
      states.set(name, { enabled: runtime.config.enabled, blockedUntil: until ? until.getTime() : null });
    }
    const ceiling = routeCeiling(maxUnitCost, offer.sale_price);
    const routeSources: RouteSource[] = sources.map((s) => ({
      position: s.position,
      supplier: s.supplier,
      sku_key: s.sku_key,
      cost_price: s.cost_price,
      available: s.available,
    }));
    return { steps: planRoute(offer.routing, routeSources, states, ceiling, this.clock.nowMs()).steps, ceiling };
  }

  /**
   * The follow-up of a refusal of the attempt `at` (undefined for a direct order, or an offer that no
   * longer exists). `withCallback`: whether a new attempt at a supplier carries our callback_url.
   */
  async followUp(at: FailoverPoint, withCallback: (supplier: string) => boolean): Promise<RefusalFollowUp | undefined> {
    if (at.offer === null) return undefined;
    const offer = await this.offers.find(at.offer);
    if (offer === null) return undefined;
    const route = await this.plan(offer, at.maxUnitCost);
    const tried: SourceRef[] = [at.current];
    if (at.orderId !== null) {
      for (const e of await this.reads.route(at.orderId))
        if (e.attempt >= at.passStart) tried.push({ supplier: e.supplier, sku_key: e.sku_key });
    }
    // the local SKUs of the sources ahead (the step's sources do not depend on the refusal); a source
    // its supplier's catalog lacks is passed over
    let steps = route.steps;
    const skus = new Map<RouteSource, CatalogSku>();
    for (;;) {
      const ahead = nextOfferStep(steps, tried, null);
      if (ahead.kind === 'stay') return undefined;
      const sources = [...ahead.refused.map((r) => r.source), ...(ahead.kind === 'try' ? [ahead.source] : [])];
      const lacking = new Set<RouteSource>();
      for (const s of sources) {
        if (skus.has(s)) continue;
        const { found } = await this.reads.findSkuForOrder(s.sku_key, at.shopOrderNo, s.supplier);
        const sku = this.catalog.skuForOrder(s.sku_key, found, s.supplier).sku;
        if (sku) skus.set(s, sku);
        else lacking.add(s);
      }
      if (lacking.size === 0) break;
      steps = steps.filter((s) => !lacking.has(s.source));
    }
    return async (tx, rejected, code, sent) => {
      const step = nextOfferStep(steps, tried, { status: 'rejected', errorCode: code, sent });
      if (step.kind === 'stay') return null;
      let order = rejected;
      let reason = code ?? 'unknown';
      const failovers: string[] = [];
      for (const r of step.refused) {
        failovers.push(reason);
        order = await this.reserve(tx, order, r.source, skus.get(r.source)!, reason, at, route.ceiling, withCallback);
        order = await this.refuseReserved(tx, order, r.code, refusalMessage(r));
        reason = r.code;
      }
      if (step.kind === 'try') {
        failovers.push(reason);
        order = await this.reserve(tx, order, step.source, skus.get(step.source)!, reason, at, route.ceiling, withCallback);
      }
      tx.afterCommit(() => {
        for (const r of failovers) this.metrics.offerFailovers.inc({ reason: r });
      });
      return order === rejected ? null : order;
    };
  }

  /** Counts an offer order's attempt `attemptNo` that its source took (placed or unknown) in relay_offer_orders_routed_total. */
  noteTaken(order: OrderRecord, attemptNo: number): void {
    if (order.offer === null || order.attempt !== attemptNo || order.status === 'rejected' || order.status === 'queued') return;
    this.metrics.offerRouted.inc({ supplier: order.supplier });
  }

  /**
   * The order's next attempt reserved `queued` at `source`, with the SKU as the local catalog knows it
   * (its price guard is made when it is sent).
   */
  private async reserve(
    tx: OrderTx,
    rejected: OrderRecord,
    source: RouteSource,
    sku: CatalogSku,
    reason: string,
    at: FailoverPoint,
    ceiling: string | null,
    withCallback: (supplier: string) => boolean,
  ): Promise<OrderRecord> {
    const n = rejected.attempt + 1;
    const dno = downstreamOrderNo(rejected.shopOrderNo, n);
    const form = at.manualFormData ?? (sku.fulfillmentType === 'manual' ? {} : undefined);
    const request: AttemptRequest = {
      sku_id: sku.upstreamSkuId,
      quantity: rejected.quantity,
      ...(form !== undefined ? { manual_form_data: form } : {}),
      trace_id: rejected.traceId,
      with_callback: withCallback(source.supplier),
      route_from: at.passStart,
    };
    const now = this.clock.now();
    await tx.insertAttempt(rejected.id, n, dno, request, now, sendLeaseMs(this.config.upstream.timeoutMs), 'queued', {
      supplier: source.supplier,
      skuKey: sku.skuKey,
    });
    const patch = {
      attempt: n,
      downstream_order_no: dno,
      supplier: source.supplier,
      sku_key: sku.skuKey,
      product_id: sku.productId,
      sku_id: sku.upstreamSkuId,
      unit_cost: sku.costPrice,
      expected_amount: expectedAmount(sku.costPrice, rejected.quantity),
      price_ceiling: priceCeiling(at.maxUnitCost ?? ceiling ?? undefined, sku.salePrice),
      error_code: null,
      error_message: null,
    };
    return this.updater.moveLocal(tx, { ...rejected, attempt: n, supplier: source.supplier }, 'resubmit', 'queued', 'api', patch, {
      attempt: n,
      downstream_order_no: dno,
      failover_from: rejected.supplier,
      reason,
    });
  }

  /** A reserved attempt refused before sending: the attempt and the order `rejected` with `code`. */
  private async refuseReserved(tx: OrderTx, order: OrderRecord, code: string, message: string): Promise<OrderRecord> {
    const attempt = await tx.lockAttempt(order.id, order.attempt);
    if (!attempt) throw new Error(`order ${order.shopOrderNo}: attempt ${order.attempt} vanished`);
    await tx.updateAttempt(attempt.id, { status: 'rejected', finished_at: this.clock.now(), error_code: code, error_message: message });
    return this.updater.moveLocal(
      tx,
      order,
      'dequeue',
      'rejected',
      'api',
      { error_code: code, error_message: message },
      { attempt: order.attempt, error_code: code },
    );
  }
}
