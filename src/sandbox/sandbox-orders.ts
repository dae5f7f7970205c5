/**
 * The sandbox's order world: the orders and their timetable, the wallet, every status change (emitted
 * as an 'order' event and, with a callback_url, called back), the API's order calls (create, read,
 * cancel) and the operator helpers tests and the control API drive (deliver, refund, set a status,
 * advance the timetable).
 */
import { createHash } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { callbackUrlProblem } from './sandbox-callbacks.js';
import type { SandboxCatalog } from './sandbox-catalog.js';
import { DEFAULT_SANDBOX_TIMETABLE, type SandboxConfig } from './sandbox-config.js';
import type { FaultRule, SandboxFaults } from './sandbox-faults.js';
import { ApiError, bad, errorJson, okAnswer, type Answer } from './sandbox-http.js';
import { formatMoney, parseMoney } from './sandbox-money.js';
import { dujiaoManualFormProblem, missingRequiredFields, validateCreate } from './sandbox-order-input.js';
import {
  SANDBOX_ORDER_STATUSES,
  type MultiLanguageText,
  type SandboxCallbackBody,
  type SandboxCreatedOrder,
  type SandboxFulfillment,
  type SandboxFulfillmentType,
  type SandboxOrderDetail,
  type SandboxOrderEvent,
  type SandboxOrderStatus,
  type SandboxOrderView,
  type SandboxRefundRecord,
  type SandboxStats,
  type SandboxTimetable,
} from './sandbox.types.js';

const ORDER_ID_BASE = 100_000;

interface OrderRecord {
  id: number;
  seq: number;
  orderNo: string;
  downstreamOrderNo: string | null;
  traceId: string | null;
  callbackUrl: string | null;
  manualFormData: Record<string, unknown> | null;
  status: SandboxOrderStatus;
  history: SandboxOrderStatus[];
  productId: number;
  skuId: number;
  skuCode: string;
  title: MultiLanguageText;
  quantity: number;
  unitCents: bigint;
  amountCents: bigint;
  currency: string;
  fulfillmentType: SandboxFulfillmentType;
  fulfillment: SandboxFulfillment | null;
  refundedCents: bigint;
  /** Each refund given, oldest first: Dujiao-Next's `refund_records`. */
  refunds: Array<{ cents: bigint; at: number }>;
  /** Wall clock (the clock option) at creation. */
  createdAt: number;
  /** performance.now() at creation: the timetable's origin. */
  startedAt: number;
  timetable: SandboxTimetable;
  step: NodeJS.Timeout | null;
  /** False for a payment_failed order: nothing taken, nothing to give back. */
  charged: boolean;
}

/** Auto-order timetable: the chain of steps, each with its delay key. */
const CHAIN: ReadonlyArray<{ from: SandboxOrderStatus; to: SandboxOrderStatus; key: keyof SandboxTimetable }> = [
  { from: 'pending_payment', to: 'paid', key: 'paidMs' },
  { from: 'paid', to: 'fulfilling', key: 'fulfillingMs' },
  { from: 'fulfilling', to: 'delivered', key: 'deliveredMs' },
  { from: 'delivered', to: 'completed', key: 'completedMs' },
];
/** The step an automatic order takes from `paid` under `skipsFulfilling`. */
const PAID_TO_DELIVERED = { from: 'paid', to: 'delivered', key: 'deliveredMs' } as const;
const DELIVERABLE: ReadonlySet<SandboxOrderStatus> = new Set(['pending_payment', 'paid', 'fulfilling', 'partially_delivered']);

/** What the order world needs from the server around it. */
export interface SandboxOrdersDeps {
  config: Readonly<SandboxConfig>;
  clock: () => number;
  catalog: SandboxCatalog;
  faults: SandboxFaults;
  stats: SandboxStats;
  events: EventEmitter;
  /** A wait the server's stop() ends at once. */
  sleep: (ms: number) => Promise<void>;
  isClosed: () => boolean;
  dispatchCallback: (url: string, body: SandboxCallbackBody) => void;
  initialTimetable: SandboxTimetable;
}

function orderNoFor(clockMs: number, seq: number): string {
  const d = new Date(clockMs);
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  const date = `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}`;
  return `DJ${date}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}${p(seq, 6)}`;
}

/**
 * One line per unit of quantity. Every third order (by creation sequence) uses CR LF line endings
 * with a blank line between items, as some real suppliers do.
 */
function autoPayload(o: OrderRecord): string {
  const lines: string[] = [];
  for (let i = 1; i <= o.quantity; i++) {
    const secret = createHash('sha256').update(`${o.orderNo}:${i}`).digest('hex').slice(0, 12).toUpperCase();
    lines.push(`${o.skuCode}-${o.orderNo}-${String(i).padStart(4, '0')}-${secret}`);
  }
  return o.seq % 3 === 0 ? `${lines.join('\r\n\r\n')}\r\n` : lines.join('\n');
}

export class SandboxOrders {
  private currentTimetable: SandboxTimetable;
  private balanceCents: bigint;
  private readonly ordersById = new Map<number, OrderRecord>();
  private readonly byDownstreamNo = new Map<string, number>();
  private orderSeq = 0;

  constructor(private readonly deps: SandboxOrdersDeps) {
    this.currentTimetable = { ...deps.initialTimetable };
    this.balanceCents = parseMoney(deps.config.walletBalance);
  }

  private get config(): Readonly<SandboxConfig> {
    return this.deps.config;
  }

  /** Orders, wallet and timetable back to the start. */
  reset(): void {
    this.stopTimers();
    this.ordersById.clear();
    this.byDownstreamNo.clear();
    this.orderSeq = 0;
    this.balanceCents = parseMoney(this.config.walletBalance);
    this.currentTimetable = { ...this.deps.initialTimetable };
  }

  /** Clears every order's pending timetable step. */
  stopTimers(): void {
    for (const o of this.ordersById.values()) this.clearStep(o);
  }

  get count(): number {
    return this.ordersById.size;
  }

  list(): SandboxOrderView[] {
    return [...this.ordersById.values()].map((o) => this.view(o));
  }

  get(orderId: number): SandboxOrderView | undefined {
    const o = this.ordersById.get(orderId);
    return o ? this.view(o) : undefined;
  }

  /** The callback body of the order's current state (retries send the state at that moment). */
  currentCallbackBody(orderId: number): SandboxCallbackBody | null {
    const o = this.ordersById.get(orderId);
    return o ? this.callbackBody(o) : null;
  }

  walletBalance(): string {
    return formatMoney(this.balanceCents);
  }

  setWalletBalance(balance: string): void {
    this.balanceCents = parseMoney(balance);
  }

  get timetable(): SandboxTimetable {
    return this.currentTimetable;
  }

  setTimetable(partial: Partial<SandboxTimetable>): void {
    for (const [k, v] of Object.entries(partial)) {
      if (!(k in DEFAULT_SANDBOX_TIMETABLE)) throw new RangeError(`unknown timetable step ${k}`);
      if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 0))
        throw new RangeError(`${k} must be null or an integer >= 0`);
    }
    this.currentTimetable = { ...this.currentTimetable, ...partial };
  }

  waitForStatus(orderId: number, status: SandboxOrderStatus, timeoutMs: number): Promise<SandboxOrderView> {
    const o = this.ordersById.get(orderId);
    if (o && o.status === status) return Promise.resolve(this.view(o));
    const events = this.deps.events;
    return new Promise((resolve, reject) => {
      const onOrder = (e: SandboxOrderEvent): void => {
        if (e.orderId !== orderId || e.to !== status) return;
        clearTimeout(timer);
        events.off('order', onOrder);
        resolve(e.order);
      };
      const timer = setTimeout(() => {
        events.off('order', onOrder);
        reject(
          new Error(
            `order ${orderId} did not reach ${status} within ${timeoutMs} ms (now ${this.ordersById.get(orderId)?.status ?? 'unknown'})`,
          ),
        );
      }, timeoutMs);
      events.on('order', onOrder);
    });
  }

  // --------------------------------------------------------------------------- operator helpers

  /** `callback`: whether the change is called back (default: the `refundCallbacks` option). */
  refund(orderId: number, amount?: string, callback?: boolean): SandboxOrderView {
    const o = this.mustOrder(orderId);
    if (!o.charged || o.status === 'canceled' || o.status === 'refunded')
      throw new RangeError(`order ${orderId} is ${o.status}: nothing to refund`);
    const remaining = o.amountCents - o.refundedCents;
    const cents = amount === undefined ? remaining : parseMoney(amount);
    if (cents <= 0n || cents > remaining) throw new RangeError(`refund must be more than 0 and at most ${formatMoney(remaining)}`);
    o.refundedCents += cents;
    o.refunds.push({ cents, at: this.deps.clock() });
    this.balanceCents += cents;
    this.clearStep(o);
    this.transition(
      o,
      o.refundedCents === o.amountCents ? 'refunded' : 'partially_refunded',
      true,
      callback ?? this.config.refundCallbacks,
    );
    return this.view(o);
  }

  /** The payload an auto order is delivered with (the control API's default for a manual delivery). */
  autoPayloadOf(orderId: number): string {
    return autoPayload(this.mustOrder(orderId));
  }

  deliverManual(orderId: number, payload: string, deliveryData: Record<string, unknown> | null): SandboxOrderView {
    const o = this.mustOrder(orderId);
    if (!DELIVERABLE.has(o.status)) throw new RangeError(`order ${orderId} is ${o.status}: nothing to deliver`);
    this.clearStep(o);
    o.fulfillment = this.fulfillment(o, payload, deliveryData);
    this.transition(o, 'delivered');
    this.scheduleNext(o);
    return this.view(o);
  }

  setStatus(
    orderId: number,
    status: SandboxOrderStatus,
    opts: { payload?: string; deliveryData?: Record<string, unknown> | null },
  ): SandboxOrderView {
    if (!SANDBOX_ORDER_STATUSES.includes(status)) throw new RangeError(`unknown order status ${String(status)}`);
    const o = this.mustOrder(orderId);
    this.clearStep(o);
    if (opts.payload !== undefined) o.fulfillment = this.fulfillment(o, opts.payload, opts.deliveryData ?? null);
    this.transition(o, status, true);
    return this.view(o);
  }

  advanceAll(): void {
    for (const o of this.ordersById.values()) this.advance(o);
  }

  advanceOrder(orderId: number): SandboxOrderView {
    const o = this.mustOrder(orderId);
    this.advance(o);
    return this.view(o);
  }

  // --------------------------------------------------------------------------------------- API

  /**
   * Check-then-insert, as the real upstream: the `downstream_order_no` check, then the configured
   * latency, then the checks of the SKU and the insert. Two concurrent creates with one number can
   * therefore both create. A repeated number is answered with the earlier order as it is now (its
   * current status, no fulfillment), as Dujiao-Next's CreateOrder does. With `paysInCreate` (profile
   * `dujiao-next`) the order is paid in the call and the answer says `paid`; a `payment_failed` order
   * (the fault, or with `lowBalance` `payment_failed` a wallet that cannot pay) is canceled and named
   * in the refusal.
   */
  async create(raw: Buffer, rule: FaultRule | undefined): Promise<Answer> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      throw bad('the body is not JSON');
    }
    const input = validateCreate(parsed, this.config.maxQuantity);
    if (input.callback_url !== undefined) {
      const problem = callbackUrlProblem(input.callback_url, this.config.allowPrivateCallbackUrls);
      if (problem) throw new ApiError(400, 'invalid_callback_url', problem);
    }
    const dno = input.downstream_order_no;
    if (this.config.dedupeDownstreamOrderNo && dno !== undefined) {
      const earlier = this.byDownstreamNo.get(dno);
      const existing = earlier === undefined ? undefined : this.ordersById.get(earlier);
      if (existing) return okAnswer(this.createdShape(existing));
    }

    await this.deps.sleep(this.deps.faults.latencyMs);
    if (this.deps.isClosed()) return { status: 503, body: errorJson('service_unavailable', 'stopped') };

    const catalog = this.deps.catalog;
    const sku = catalog.skuRecord(input.sku_id);
    if (!sku || !sku.isActive) throw new ApiError(400, 'sku_unavailable', 'the SKU does not exist or is disabled');
    const product = catalog.productRecord(sku.productId);
    if (!product || !product.listed) throw new ApiError(400, 'product_unavailable', 'the product is unavailable');
    if (product.fulfillmentType === 'manual' && this.config.manualFormCheck === 'dujiao-next') {
      const problem = dujiaoManualFormProblem(product.manualFormSchema, input.manual_form_data);
      if (problem) throw bad(`manual form data is invalid: ${problem}`);
    } else if (product.fulfillmentType === 'manual') {
      if (input.manual_form_data === undefined) throw bad('manual_form_data is required for a manual-fulfillment product');
      // Dujiao-Next validates the data against the product's schema: 400 bad_request "manual form data is invalid: …"
      const missing = missingRequiredFields(product.manualFormSchema, input.manual_form_data);
      if (missing.length > 0) throw bad(`manual form data is invalid: required field ${missing.join(', ')} missing or empty`);
    }
    if (sku.stockStatus === 'out_of_stock' || (sku.stockQuantity >= 0 && sku.stockQuantity < input.quantity)) {
      throw new ApiError(409, 'insufficient_stock', 'not enough stock');
    }
    const amount = sku.priceCents * BigInt(input.quantity);
    const tooPoor = amount > this.balanceCents;
    if (tooPoor && rule?.kind !== 'payment_failed' && this.config.lowBalance === 'insufficient_balance') {
      throw new ApiError(402, 'insufficient_balance', 'wallet balance too low');
    }
    // a payment_failed fault, or (lowBalance payment_failed) a wallet that cannot pay: the order is
    // created, its payment fails and it is canceled, nothing taken
    const paymentFails = rule?.kind === 'payment_failed' || tooPoor;
    const failureMessage =
      rule?.kind === 'payment_failed' ? (rule.errorMessage ?? 'payment failed') : 'wallet payment failed: insufficient balance';

    const seq = ++this.orderSeq;
    const now = this.deps.clock();
    const o: OrderRecord = {
      id: ORDER_ID_BASE + seq,
      seq,
      orderNo: orderNoFor(now, seq),
      downstreamOrderNo: dno ?? null,
      traceId: input.trace_id ?? null,
      callbackUrl: input.callback_url ?? null,
      manualFormData: input.manual_form_data ?? null,
      status: paymentFails ? 'canceled' : 'pending_payment',
      history: paymentFails ? ['pending_payment', 'canceled'] : ['pending_payment'],
      productId: product.id,
      skuId: sku.id,
      skuCode: sku.skuCode,
      title: product.title,
      quantity: input.quantity,
      unitCents: sku.priceCents,
      amountCents: amount,
      currency: this.config.currency,
      fulfillmentType: product.fulfillmentType,
      fulfillment: null,
      refundedCents: 0n,
      refunds: [],
      createdAt: now,
      startedAt: performance.now(),
      timetable: { ...this.currentTimetable },
      step: null,
      charged: !paymentFails,
    };
    this.ordersById.set(o.id, o);
    if (this.config.dedupeDownstreamOrderNo && dno !== undefined && !this.byDownstreamNo.has(dno)) this.byDownstreamNo.set(dno, o.id);
    this.deps.stats.createsExecuted++;
    if (paymentFails) {
      this.emitOrder(o, null);
      // Dujiao-Next cancels the order whose wallet payment failed and names it in the refusal
      return okAnswer({
        ok: false,
        error_code: 'payment_failed',
        error_message: failureMessage,
        order_id: o.id,
        order_no: o.orderNo,
        status: o.status,
      });
    }
    this.balanceCents -= amount;
    catalog.takeStock(sku, input.quantity);
    this.emitOrder(o, null);
    // Dujiao-Next pays the order from the wallet inside the create call (and calls the payment back)
    if (this.config.paysInCreate) this.transition(o, 'paid');
    this.scheduleNext(o);
    return okAnswer(this.createdShape(o));
  }

  read(orderId: number): Answer {
    const o = this.ordersById.get(orderId);
    if (!o) throw new ApiError(404, 'order_not_found', 'no such order');
    return okAnswer(this.detail(o));
  }

  cancel(orderId: number): Answer {
    const o = this.ordersById.get(orderId);
    if (!o) throw new ApiError(404, 'order_not_found', 'no such order');
    if (!this.config.cancelableStatuses.includes(o.status))
      throw new ApiError(409, 'cancel_not_allowed', `an order in ${o.status} cannot be canceled`);
    this.clearStep(o);
    if (o.charged) {
      this.balanceCents += o.amountCents - o.refundedCents;
      this.deps.catalog.returnStock(o.skuId, o.quantity);
    }
    this.deps.stats.cancelsExecuted++;
    this.transition(o, 'canceled');
    return okAnswer({ ok: true, order_id: o.id, order_no: o.orderNo, status: 'canceled' });
  }

  // ----------------------------------------------------------------------------------- private

  private mustOrder(orderId: number): OrderRecord {
    const o = this.ordersById.get(orderId);
    if (!o) throw new RangeError(`unknown order ${orderId}`);
    return o;
  }

  private fulfillment(o: OrderRecord, payload: string, deliveryData: Record<string, unknown> | null): SandboxFulfillment {
    return {
      type: o.fulfillmentType,
      status: 'delivered',
      payload,
      delivery_data: deliveryData,
      delivered_at: new Date(this.deps.clock()).toISOString(),
    };
  }

  /**
   * Moves an order; every change is emitted and, with a callback_url, called back `callbacksPerChange`
   * times. Dujiao-Next enqueues a callback for the order and one for its child order; the child has no
   * callback reference of its own, so both resolve to the order's, and each send reads that order: two
   * callbacks with one body (the order's id, number, status and fulfillment; the same second). Each
   * copy is a callback of its own: faults, signing and retries apply to each. `callback` false: the
   * change is emitted but not called back (an admin refund on Dujiao-Next).
   */
  private transition(o: OrderRecord, to: SandboxOrderStatus, evenIfSame = false, callback = true): void {
    const from = o.status;
    if (from === to && !evenIfSame) return;
    o.status = to;
    o.history.push(to);
    if ((to === 'delivered' || to === 'completed') && !o.fulfillment) o.fulfillment = this.fulfillment(o, autoPayload(o), null);
    this.emitOrder(o, from);
    if (o.callbackUrl && callback) {
      const body = this.callbackBody(o);
      for (let i = 0; i < this.config.callbacksPerChange; i++) this.deps.dispatchCallback(o.callbackUrl, { ...body });
    }
  }

  private emitOrder(o: OrderRecord, from: SandboxOrderStatus | null): void {
    const events = this.deps.events;
    if (events.listenerCount('order') === 0) return;
    const e: SandboxOrderEvent = { orderId: o.id, from, to: o.status, order: this.view(o) };
    events.emit('order', e);
  }

  private clearStep(o: OrderRecord): void {
    if (o.step) clearTimeout(o.step);
    o.step = null;
  }

  /** Arms the timer of the order's next timetable step, if it has one that is switched on. */
  private scheduleNext(o: OrderRecord): void {
    this.clearStep(o);
    if (this.deps.isClosed()) return;
    const step = this.nextStep(o);
    if (!step) return;
    if (step.to === 'delivered' && o.fulfillmentType === 'manual') return;
    const at = o.timetable[step.key];
    if (at === null) return;
    const wait = Math.max(0, o.startedAt + at - performance.now());
    o.step = setTimeout(() => {
      o.step = null;
      this.runStep(o);
    }, wait);
  }

  /** The order's next timetable step (`paid` → `delivered` for an automatic order under `skipsFulfilling`). */
  private nextStep(o: OrderRecord): (typeof CHAIN)[number] | undefined {
    if (o.status === 'paid' && this.config.skipsFulfilling && o.fulfillmentType !== 'manual') return PAID_TO_DELIVERED;
    return CHAIN.find((s) => s.from === o.status);
  }

  private runStep(o: OrderRecord): void {
    const step = this.nextStep(o);
    if (!step) return;
    this.transition(o, step.to);
    this.scheduleNext(o);
  }

  private advance(o: OrderRecord): void {
    while (o.step) {
      this.clearStep(o);
      this.runStep(o);
    }
  }

  private createdShape(o: OrderRecord): SandboxCreatedOrder {
    return { ok: true, order_id: o.id, order_no: o.orderNo, status: o.status, amount: formatMoney(o.amountCents), currency: o.currency };
  }

  private detail(o: OrderRecord): SandboxOrderDetail {
    const d: SandboxOrderDetail = {
      ok: true,
      order_id: o.id,
      order_no: o.orderNo,
      status: o.status,
      amount: formatMoney(o.amountCents),
      currency: o.currency,
      items: [
        {
          product_id: o.productId,
          sku_id: o.skuId,
          title: o.title,
          quantity: o.quantity,
          unit_price: formatMoney(o.unitCents),
          total_price: formatMoney(o.amountCents),
          fulfillment_type: o.fulfillmentType,
        },
      ],
    };
    if (o.fulfillment) d.fulfillment = o.fulfillment;
    if (this.config.orderDetailShowsDownstreamNo && o.downstreamOrderNo !== null) d.downstream_order_no = o.downstreamOrderNo;
    if (o.refundedCents > 0n || o.status === 'refunded' || o.status === 'partially_refunded')
      d.refunded_amount = formatMoney(o.refundedCents);
    if (this.config.refundRecords) d.refund_records = o.refunds.map((r, i) => this.refundRecord(o, r, i));
    return d;
  }

  /** One entry of Dujiao-Next's `refund_records`: a refund to the API user's wallet. */
  private refundRecord(o: OrderRecord, r: { cents: bigint; at: number }, index: number): SandboxRefundRecord {
    const at = new Date(r.at).toISOString();
    return {
      id: index + 1,
      user_id: this.config.userId,
      guest_email: '',
      order_id: o.id,
      type: 'wallet',
      amount: formatMoney(r.cents),
      currency: o.currency,
      remark: '',
      created_at: at,
      updated_at: at,
    };
  }

  private callbackBody(o: OrderRecord): SandboxCallbackBody {
    return {
      event: o.status === 'delivered' || o.status === 'completed' ? 'order.fulfilled' : 'order.status_changed',
      order_id: o.id,
      order_no: o.orderNo,
      ...(o.downstreamOrderNo !== null ? { downstream_order_no: o.downstreamOrderNo } : {}),
      status: o.status,
      ...(o.fulfillment ? { fulfillment: { ...o.fulfillment } } : {}),
      timestamp: Math.floor(this.deps.clock() / 1000),
    };
  }

  private view(o: OrderRecord): SandboxOrderView {
    return {
      id: o.id,
      order_no: o.orderNo,
      downstream_order_no: o.downstreamOrderNo,
      status: o.status,
      amount: formatMoney(o.amountCents),
      currency: o.currency,
      product_id: o.productId,
      sku_id: o.skuId,
      sku_code: o.skuCode,
      quantity: o.quantity,
      fulfillment_type: o.fulfillmentType,
      payload: o.fulfillment?.payload ?? null,
      refunded_amount: o.refundedCents > 0n ? formatMoney(o.refundedCents) : null,
      callback_url: o.callbackUrl,
      trace_id: o.traceId,
      manual_form_data: o.manualFormData,
      created_at: new Date(o.createdAt).toISOString(),
      history: [...o.history],
    };
  }
}
