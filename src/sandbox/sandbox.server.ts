/**
 * The sandbox upstream: a faithful simulator of the upstream purchasing API (shared/upstream-api.md)
 * with the real upstream's known behaviour (CONTRACT §4), as a real HTTP server on `node:http` so that
 * faults can touch sockets. Used in-process by the service's tests (port 0) and its zero-config start,
 * and alone by shop developers (`relay sandbox`).
 *
 * API under `/api/v1/upstream` (every request signed, see src/signing):
 *   POST /ping · GET /categories · GET /products?page&page_size&updated_after · GET /products/{id}
 *   POST /orders · GET /orders/{id} · POST /orders/{id}/cancel
 * Authentication refusals as Dujiao-Next's (checked in this order): 401 missing_auth_headers, 401
 * invalid_timestamp, 401 timestamp_expired, 403 invalid_api_key, 401 invalid_signature.
 *
 * Control API under `/__sandbox/` (no authentication; JSON in, JSON `{ok, …}` out; 400 bad_request on
 * an invalid body). Meant for shop developers driving a standalone sandbox with curl:
 *   GET  /__sandbox/state                      wallet, counts, stats, faults, timetable
 *   GET  /__sandbox/orders                     every order (see SandboxOrderView)
 *   GET  /__sandbox/callbacks                  the callback log (every try)
 *   POST /__sandbox/reset                      everything back to the start (catalog, wallet, orders, faults, stats)
 *   POST /__sandbox/faults                     body: Partial<FaultSettings> → faults.set(); answers the faults
 *                                              (besides rules and latency, listing behaviours: e.g.
 *                                              {"updatedAfterFilter":"inclusive_seconds"|"ignored"},
 *                                              {"withdrawWhilePaging":{"afterPage":1}}: see sandbox-faults.ts)
 *   POST /__sandbox/faults/reset               no faults
 *   POST /__sandbox/faults/rules               body: FaultRule → faults.add()
 *   POST /__sandbox/connections/refuse         body: {ms?}: refuse connections, reopen after ms (default 5000)
 *   POST /__sandbox/timetable                  body: Partial<SandboxTimetable> (new orders)
 *   POST /__sandbox/advance                    run every pending timetable step now
 *   POST /__sandbox/callbacks/flush            send the snapshots held by the `reorder` fault
 *   POST /__sandbox/wallet                     body: {balance}
 *   POST /__sandbox/orders/{id}/deliver        body: {payload?, delivery_data?}
 *   POST /__sandbox/orders/{id}/refund         body: {amount?}
 *   POST /__sandbox/orders/{id}/status         body: {status, payload?}
 *   POST /__sandbox/catalog/price              body: {sku_code, price}
 *   POST /__sandbox/catalog/stock              body: {sku_code, stock_status, stock_quantity?}
 *   POST /__sandbox/catalog/sku-active         body: {sku_code, is_active}
 *   POST /__sandbox/catalog/sku-id             body: {sku_code}             → {sku_id}
 *   POST /__sandbox/catalog/remove-sku         body: {sku_code}: the product keeps its other SKUs
 *   POST /__sandbox/catalog/delist             body: {product_id}
 *   POST /__sandbox/catalog/relist             body: {product_id}
 *   POST /__sandbox/catalog/products           body: AddProductInput        → {product}
 *   POST /__sandbox/catalog/insert-at-front    body: AddProductInput?       → {product}
 *   POST /__sandbox/catalog/duplicate-sku-code body: {sku_code}             → {product_id, sku_id}
 *   POST /__sandbox/catalog/touch              body: {n}                    → {product_ids}
 */
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { constantTimeEqual, DEFAULT_SIGNATURE_TEMPLATE, signatureHeaderNames, verifySignature } from '../signing/signing.js';
import { CallbackDispatcher, callbackUrlProblem, type CallbackLogEntry } from './sandbox-callbacks.js';
import { SandboxCatalog, type AddProductInput } from './sandbox-catalog.js';
import { SandboxFaults, type FaultRule, type FaultSettings } from './sandbox-faults.js';
import { formatMoney, parseMoney } from './sandbox-money.js';
import {
  SANDBOX_ORDER_STATUSES,
  SANDBOX_OPERATIONS,
  type MultiLanguageText,
  type SandboxCallbackBody,
  type SandboxCreatedOrder,
  type SandboxFulfillment,
  type SandboxFulfillmentType,
  type SandboxLowBalance,
  type SandboxMemberLevel,
  type SandboxOperation,
  type SandboxOptions,
  type SandboxOrderDetail,
  type SandboxOrderEvent,
  type SandboxOrderStatus,
  type SandboxOrderView,
  type SandboxProfile,
  type SandboxRequestEvent,
  type SandboxRequestOutcome,
  type SandboxStats,
  type SandboxStockStatus,
  type SandboxTimetable,
} from './sandbox.types.js';

export type {
  SandboxOptions,
  SandboxTimetable,
  SandboxStats,
  SandboxOrderView,
  SandboxOrderEvent,
  SandboxRequestEvent,
  SandboxProfile,
  SandboxLowBalance,
} from './sandbox.types.js';
export type { FaultRule, FaultSettings, FaultKind, FaultOperation, CallbackFaultMode } from './sandbox-faults.js';
export type { CallbackLogEntry } from './sandbox-callbacks.js';
export type { AddProductInput, FindSkuFilter, FoundSku } from './sandbox-catalog.js';

export const SANDBOX_API_PREFIX = '/api/v1/upstream';
export const SANDBOX_CONTROL_PREFIX = '/__sandbox';
/** The fixed path Dujiao-Next signs its callbacks over. */
export const DUJIAO_NEXT_CALLBACK_PATH = '/api/v1/upstream/callback';
export const DEFAULT_SANDBOX_TIMETABLE: Readonly<SandboxTimetable> = { paidMs: 50, fulfillingMs: 100, deliveredMs: 200, completedMs: null };
export const DEFAULT_CALLBACK_RETRY_DELAYS_MS: readonly number[] = [30_000, 60_000, 120_000, 300_000];

const MAX_BODY_BYTES = 1024 * 1024;
const ORDER_ID_BASE = 100_000;
const DEFAULT_MEMBER_LEVEL: SandboxMemberLevel = { id: 2, name: { 'zh-CN': '黄金会员', en: 'Gold' }, slug: 'gold', icon: '' };

/** The sandbox's settings after defaults. */
export interface SandboxConfig {
  profile: SandboxProfile;
  headerPrefix: string;
  signatureTemplate: string;
  apiKey: string;
  apiSecret: string;
  callbackSecret: string;
  /** null: by profile (spec → the callback_url's path). */
  callbackSignaturePath: string | null;
  timestampToleranceS: number;
  pageSizeCap: number;
  dedupeDownstreamOrderNo: boolean;
  orderDetailShowsDownstreamNo: boolean;
  paysInCreate: boolean;
  cancelableStatuses: readonly SandboxOrderStatus[];
  lowBalance: SandboxLowBalance;
  servesInactiveSkus: boolean;
  maxQuantity: number;
  catalogProducts: number;
  catalogSeed: number;
  walletBalance: string;
  currency: string;
  callbackRetryDelaysMs: number[];
  callbackTimeoutMs: number;
  allowPrivateCallbackUrls: boolean;
  siteName: string;
  userId: number;
  memberLevel: SandboxMemberLevel | null;
}

/** What a client needs to talk to the sandbox (see sandbox-request.ts). */
export interface SandboxCredentials {
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  headerPrefix: string;
  signatureTemplate: string;
}

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
  /** Wall clock (the clock option) at creation. */
  createdAt: number;
  /** performance.now() at creation: the timetable's origin. */
  startedAt: number;
  timetable: SandboxTimetable;
  step: NodeJS.Timeout | null;
  /** False for a payment_failed order: nothing taken, nothing to give back. */
  charged: boolean;
}

interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

interface RouteMatch {
  operation: SandboxOperation;
  id: string | null;
}

interface CreateOrderInput {
  sku_id: number;
  quantity: number;
  manual_form_data?: Record<string, unknown>;
  downstream_order_no?: string;
  trace_id?: string;
  callback_url?: string;
}

/** A refusal with a contract code; becomes the `{ok:false, error_code, error_message}` envelope. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

class BodyTooLargeError extends Error {}

/** Auto-order timetable: the chain of steps, each with its delay key. */
const CHAIN: ReadonlyArray<{ from: SandboxOrderStatus; to: SandboxOrderStatus; key: keyof SandboxTimetable }> = [
  { from: 'pending_payment', to: 'paid', key: 'paidMs' },
  { from: 'paid', to: 'fulfilling', key: 'fulfillingMs' },
  { from: 'fulfilling', to: 'delivered', key: 'deliveredMs' },
  { from: 'delivered', to: 'completed', key: 'completedMs' },
];
/** Cancelable states by profile: the spec does not show them; Dujiao-Next's CancelOrder takes only pending_payment. */
const SPEC_CANCELABLE: readonly SandboxOrderStatus[] = ['pending_payment', 'paid'];
const DUJIAO_NEXT_CANCELABLE: readonly SandboxOrderStatus[] = ['pending_payment'];
const DELIVERABLE: ReadonlySet<SandboxOrderStatus> = new Set(['pending_payment', 'paid', 'fulfilling', 'partially_delivered']);

const ROUTES: ReadonlyArray<{ method: string; re: RegExp; operation: SandboxOperation }> = [
  { method: 'POST', re: /^\/ping$/, operation: 'ping' },
  { method: 'GET', re: /^\/categories$/, operation: 'categories' },
  { method: 'GET', re: /^\/products$/, operation: 'products' },
  { method: 'GET', re: /^\/products\/([^/]+)$/, operation: 'product' },
  { method: 'POST', re: /^\/orders$/, operation: 'createOrder' },
  { method: 'GET', re: /^\/orders\/([^/]+)$/, operation: 'getOrder' },
  { method: 'POST', re: /^\/orders\/([^/]+)\/cancel$/, operation: 'cancelOrder' },
];

const LOW_BALANCE_MODES: readonly SandboxLowBalance[] = ['payment_failed', 'insufficient_balance'];

const RFC3339_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function errorJson(code: string, message: string): string {
  return JSON.stringify({ ok: false, error_code: code, error_message: message });
}

function validLowBalance(v: SandboxLowBalance): SandboxLowBalance {
  if (!LOW_BALANCE_MODES.includes(v)) throw new RangeError(`lowBalance must be one of ${LOW_BALANCE_MODES.join(', ')}`);
  return v;
}

function validStatuses(list: readonly SandboxOrderStatus[]): SandboxOrderStatus[] {
  for (const s of list) if (!SANDBOX_ORDER_STATUSES.includes(s)) throw new RangeError(`unknown order status ${String(s)}`);
  return [...list];
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isPositiveInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

function bad(message: string): ApiError {
  return new ApiError(400, 'bad_request', message);
}

function parseId(raw: string | null, what: string): number {
  if (raw === null || !/^[1-9]\d{0,14}$/.test(raw)) throw bad(`${what} must be an integer >= 1`);
  return Number(raw);
}

function parseQueryInt(raw: string | null, fallback: number, name: string): number {
  if (raw === null || raw === '') return fallback;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw bad(`${name} must be an integer >= 1`);
  return Number(raw);
}

function validateCreate(body: unknown, maxQuantity: number): CreateOrderInput {
  if (!isPlainObject(body)) throw bad('the body must be a JSON object');
  if (!isPositiveInt(body.sku_id)) throw bad('sku_id must be an integer >= 1');
  if (!isPositiveInt(body.quantity)) throw bad('quantity must be an integer >= 1');
  if (body.quantity > maxQuantity) throw bad(`quantity must be at most ${maxQuantity}`);
  const input: CreateOrderInput = { sku_id: body.sku_id, quantity: body.quantity };
  if (body.manual_form_data !== undefined && body.manual_form_data !== null) {
    if (!isPlainObject(body.manual_form_data)) throw bad('manual_form_data must be an object');
    input.manual_form_data = body.manual_form_data;
  }
  for (const [key, max] of [
    ['downstream_order_no', 128],
    ['trace_id', 256],
  ] as const) {
    const v = body[key];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string' || v.length > max) throw bad(`${key} must be a string of at most ${max} characters`);
    input[key] = v;
  }
  // a URI, judged by callbackUrlProblem (too long, empty, not a URL: invalid_callback_url)
  const callbackUrl = body.callback_url;
  if (callbackUrl !== undefined && callbackUrl !== null) {
    if (typeof callbackUrl !== 'string') throw bad('callback_url must be a string');
    input.callback_url = callbackUrl;
  }
  return input;
}

/**
 * Keys of the required fields of a manual form schema `{fields: [{key, required}]}` that the data
 * lacks or leaves empty (absent, null or ''). A schema without a `fields` list requires nothing.
 * The same reading as the relay's own check (src/orders/order-request.ts `missingManualFields`),
 * written apart on purpose: the sandbox is the upstream the relay is tested against, and shares only
 * the wire protocol's code with it (signing), so that a mistake in the relay's reading is not also the
 * upstream's.
 */
function missingRequiredFields(schema: Record<string, unknown> | null, data: Record<string, unknown>): string[] {
  const fields = schema?.fields;
  if (!Array.isArray(fields)) return [];
  const missing: string[] = [];
  for (const f of fields as unknown[]) {
    if (!isPlainObject(f) || f.required !== true || typeof f.key !== 'string') continue;
    const v = data[f.key];
    if (v === undefined || v === null || v === '') missing.push(f.key);
  }
  return missing;
}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => {
      ended = true;
      if (size > limit) reject(new BodyTooLargeError('body too large'));
      else resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
    req.on('close', () => {
      if (!ended) reject(new Error('request aborted'));
    });
  });
}

function orderNoFor(clockMs: number, seq: number): string {
  const d = new Date(clockMs);
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `DJ${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}${p(seq, 6)}`;
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

export class SandboxServer {
  readonly config: Readonly<SandboxConfig>;
  readonly faults = new SandboxFaults();
  readonly catalog: SandboxCatalog;
  /** Emits 'request' (SandboxRequestEvent), 'order' (SandboxOrderEvent), 'callback' (CallbackLogEntry). */
  readonly events = new EventEmitter();
  readonly stats: SandboxStats;

  private readonly clock: () => number;
  private readonly callbacks: CallbackDispatcher;
  private readonly initialTimetable: SandboxTimetable;
  private currentTimetable: SandboxTimetable;
  private balanceCents: bigint;
  private readonly ordersById = new Map<number, OrderRecord>();
  private readonly byDownstreamNo = new Map<string, number>();
  private orderSeq = 0;

  private readonly servers = new Set<http.Server>();
  private listener: http.Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly sleeps = new Map<NodeJS.Timeout, () => void>();
  private readonly controlTimers = new Set<NodeJS.Timeout>();
  private host = '127.0.0.1';
  private port: number | null = null;
  private refusing = false;
  private closed = false;

  constructor(options: SandboxOptions = {}) {
    const profile = options.profile ?? 'spec';
    const apiSecret = options.apiSecret ?? 'sandbox-api-secret';
    this.config = Object.freeze({
      profile,
      headerPrefix: options.headerPrefix ?? (profile === 'dujiao-next' ? 'Dujiao-Next' : 'Service'),
      signatureTemplate: options.signatureTemplate ?? DEFAULT_SIGNATURE_TEMPLATE,
      apiKey: options.apiKey ?? 'sandbox-api-key',
      apiSecret,
      callbackSecret: options.callbackSecret ?? apiSecret,
      callbackSignaturePath: options.callbackSignaturePath ?? (profile === 'dujiao-next' ? DUJIAO_NEXT_CALLBACK_PATH : null),
      timestampToleranceS: options.timestampToleranceS ?? 60,
      pageSizeCap: options.pageSizeCap ?? 50,
      dedupeDownstreamOrderNo: options.dedupeDownstreamOrderNo ?? true,
      orderDetailShowsDownstreamNo: options.orderDetailShowsDownstreamNo ?? false,
      paysInCreate: options.paysInCreate ?? profile === 'dujiao-next',
      cancelableStatuses: Object.freeze(validStatuses(options.cancelableStatuses ?? (profile === 'dujiao-next' ? DUJIAO_NEXT_CANCELABLE : SPEC_CANCELABLE))),
      lowBalance: validLowBalance(options.lowBalance ?? (profile === 'dujiao-next' ? 'payment_failed' : 'insufficient_balance')),
      servesInactiveSkus: options.servesInactiveSkus ?? profile !== 'dujiao-next',
      maxQuantity: options.maxQuantity ?? 10_000,
      catalogProducts: options.catalog?.products ?? 40,
      catalogSeed: options.catalog?.seed ?? 1,
      walletBalance: formatMoney(parseMoney(options.wallet?.balance ?? '1000000.00')),
      currency: options.wallet?.currency ?? 'CNY',
      callbackRetryDelaysMs: [...(options.callbackRetryDelaysMs ?? DEFAULT_CALLBACK_RETRY_DELAYS_MS)],
      callbackTimeoutMs: options.callbackTimeoutMs ?? 5000,
      allowPrivateCallbackUrls: options.allowPrivateCallbackUrls ?? false,
      siteName: options.siteName ?? 'Sandbox Upstream',
      userId: options.userId ?? 1,
      memberLevel: options.memberLevel === undefined ? DEFAULT_MEMBER_LEVEL : options.memberLevel,
    });
    this.events.setMaxListeners(0);
    this.clock = options.clock ?? Date.now;
    this.initialTimetable = { ...DEFAULT_SANDBOX_TIMETABLE, ...options.timetable };
    this.currentTimetable = { ...this.initialTimetable };
    this.balanceCents = parseMoney(this.config.walletBalance);
    this.catalog = new SandboxCatalog(this.config.catalogProducts, this.config.catalogSeed, this.clock, this.config.servesInactiveSkus);
    this.stats = SandboxServer.emptyStats();
    const cfg = this.config;
    this.callbacks = new CallbackDispatcher(
      {
        apiKey: cfg.apiKey,
        secret: cfg.callbackSecret,
        headerPrefix: cfg.headerPrefix,
        template: cfg.signatureTemplate,
        signingPath: (url) => cfg.callbackSignaturePath ?? new URL(url).pathname,
        retryDelaysMs: cfg.callbackRetryDelaysMs,
        timeoutMs: cfg.callbackTimeoutMs,
        clock: this.clock,
        current: (orderId) => {
          const o = this.ordersById.get(orderId);
          return o ? this.callbackBody(o) : null;
        },
      },
      this.faults,
      this.stats,
      this.events,
    );
  }

  private static emptyStats(): SandboxStats {
    const requests = { unknown: 0 } as Record<SandboxOperation | 'unknown', number>;
    for (const op of SANDBOX_OPERATIONS) requests[op] = 0;
    return {
      requests,
      totalRequests: 0,
      createsReceived: 0,
      createsExecuted: 0,
      cancelsExecuted: 0,
      faultsApplied: 0,
      callbacksAttempted: 0,
      callbacksSucceeded: 0,
      callbacksDropped: 0,
    };
  }

  // ---------------------------------------------------------------------------------- lifecycle

  /** Listens on the port (0: any free one) and host. */
  async start(port = 0, host = '127.0.0.1'): Promise<void> {
    if (this.closed) throw new Error('a stopped sandbox cannot be started again');
    if (this.listener) throw new Error('the sandbox is already started');
    this.host = host;
    const server = await this.listen(port, host);
    this.port = (server.address() as AddressInfo).port;
  }

  /** Closes every socket (hung ones included), the listener and every timer. Idempotent. */
  async stop(): Promise<void> {
    if (this.closed && this.servers.size === 0) return;
    this.closed = true;
    for (const o of this.ordersById.values()) this.clearStep(o);
    for (const t of this.controlTimers) clearTimeout(t);
    this.controlTimers.clear();
    this.callbacks.stop();
    for (const [t, wake] of this.sleeps) {
      clearTimeout(t);
      wake();
    }
    this.sleeps.clear();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const servers = [...this.servers];
    this.servers.clear();
    this.listener = null;
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))));
  }

  /** `http://host:port` */
  get url(): string {
    if (this.port === null) throw new Error('the sandbox is not started');
    const host = this.host.includes(':') ? `[${this.host}]` : this.host;
    return `http://${host}:${this.port}`;
  }

  /** `http://host:port/api/v1/upstream`: what the service takes as UPSTREAM_BASE_URL. */
  get baseUrl(): string {
    return `${this.url}${SANDBOX_API_PREFIX}`;
  }

  get credentials(): SandboxCredentials {
    return {
      baseUrl: this.baseUrl,
      apiKey: this.config.apiKey,
      apiSecret: this.config.apiSecret,
      headerPrefix: this.config.headerPrefix,
      signatureTemplate: this.config.signatureTemplate,
    };
  }

  /** Closes the listener: new connections are refused (ECONNREFUSED). Idle keep-alive sockets are closed too. */
  async refuseConnections(): Promise<void> {
    const server = this.listener;
    if (!server) return;
    this.listener = null;
    this.refusing = true;
    await new Promise<void>((resolve) => {
      server.close(() => {
        this.servers.delete(server);
      });
      server.closeIdleConnections();
      setImmediate(resolve);
    });
  }

  /** Listens again on the same port after refuseConnections(). */
  async acceptConnections(): Promise<void> {
    if (this.listener || this.closed) return;
    if (this.port === null) throw new Error('the sandbox was never started');
    await this.listen(this.port, this.host);
    this.refusing = false;
  }

  /** Everything back to the start: catalog, wallet, orders, timetable, faults, stats, callback log. */
  reset(): void {
    for (const o of this.ordersById.values()) this.clearStep(o);
    this.ordersById.clear();
    this.byDownstreamNo.clear();
    this.orderSeq = 0;
    this.balanceCents = parseMoney(this.config.walletBalance);
    this.currentTimetable = { ...this.initialTimetable };
    this.catalog.regenerate();
    this.faults.reset();
    this.callbacks.clear();
    this.resetStats();
  }

  resetStats(): void {
    const fresh = SandboxServer.emptyStats();
    Object.assign(this.stats.requests, fresh.requests);
    const { requests: _requests, ...counters } = fresh;
    Object.assign(this.stats, counters);
  }

  // ------------------------------------------------------------------------------ observability

  /** Every try of every callback, in the order they finished. */
  get callbackLog(): readonly CallbackLogEntry[] {
    return this.callbacks.log;
  }

  /** Every order, oldest first. */
  orders(): SandboxOrderView[] {
    return [...this.ordersById.values()].map((o) => this.view(o));
  }

  order(orderId: number): SandboxOrderView | undefined {
    const o = this.ordersById.get(orderId);
    return o ? this.view(o) : undefined;
  }

  walletBalance(): string {
    return formatMoney(this.balanceCents);
  }

  setWalletBalance(balance: string): void {
    this.balanceCents = parseMoney(balance);
  }

  get timetable(): Readonly<SandboxTimetable> {
    return { ...this.currentTimetable };
  }

  /** Changes the timetable of orders created from now on. */
  setTimetable(partial: Partial<SandboxTimetable>): void {
    for (const [k, v] of Object.entries(partial)) {
      if (!(k in DEFAULT_SANDBOX_TIMETABLE)) throw new RangeError(`unknown timetable step ${k}`);
      if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 0)) throw new RangeError(`${k} must be null or an integer >= 0`);
    }
    this.currentTimetable = { ...this.currentTimetable, ...partial };
  }

  /** Resolves when the order reaches the status (at once if it is there). */
  waitForOrderStatus(orderId: number, status: SandboxOrderStatus, timeoutMs = 5000): Promise<SandboxOrderView> {
    const o = this.ordersById.get(orderId);
    if (o && o.status === status) return Promise.resolve(this.view(o));
    return new Promise((resolve, reject) => {
      const onOrder = (e: SandboxOrderEvent): void => {
        if (e.orderId !== orderId || e.to !== status) return;
        clearTimeout(timer);
        this.events.off('order', onOrder);
        resolve(e.order);
      };
      const timer = setTimeout(() => {
        this.events.off('order', onOrder);
        reject(new Error(`order ${orderId} did not reach ${status} within ${timeoutMs} ms (now ${this.ordersById.get(orderId)?.status ?? 'unknown'})`));
      }, timeoutMs);
      this.events.on('order', onOrder);
    });
  }

  /** Sends the callback snapshots held by the `reorder` fault (of one order, or all), newest first. */
  flushHeldCallbacks(orderId?: number): void {
    this.callbacks.flushHeld(orderId);
  }

  // --------------------------------------------------------------------------- operator helpers

  /**
   * The upstream gives money back: the whole remaining amount (→ `refunded`) or a part of it
   * (→ `partially_refunded`; repeated parts add up to `refunded`). The wallet is credited.
   */
  refundOrder(orderId: number, amount?: string): SandboxOrderView {
    const o = this.mustOrder(orderId);
    if (!o.charged || o.status === 'canceled' || o.status === 'refunded') throw new RangeError(`order ${orderId} is ${o.status}: nothing to refund`);
    const remaining = o.amountCents - o.refundedCents;
    const cents = amount === undefined ? remaining : parseMoney(amount);
    if (cents <= 0n || cents > remaining) throw new RangeError(`refund must be more than 0 and at most ${formatMoney(remaining)}`);
    o.refundedCents += cents;
    this.balanceCents += cents;
    this.clearStep(o);
    this.transition(o, o.refundedCents === o.amountCents ? 'refunded' : 'partially_refunded', true);
    return this.view(o);
  }

  /** Delivers an order (a manual one waits at `fulfilling` for this): → `delivered`, then the timetable's `completed`. */
  deliverManual(orderId: number, payload: string, deliveryData: Record<string, unknown> | null = null): SandboxOrderView {
    const o = this.mustOrder(orderId);
    if (!DELIVERABLE.has(o.status)) throw new RangeError(`order ${orderId} is ${o.status}: nothing to deliver`);
    this.clearStep(o);
    o.fulfillment = this.fulfillment(o, payload, deliveryData);
    this.transition(o, 'delivered');
    this.scheduleNext(o);
    return this.view(o);
  }

  /**
   * Puts an order in any status (stops its timetable). No wallet or stock effect. With `payload`, or
   * when moving to delivered/completed without a fulfillment, the order gets one.
   */
  setOrderStatus(orderId: number, status: SandboxOrderStatus, opts: { payload?: string; deliveryData?: Record<string, unknown> | null } = {}): SandboxOrderView {
    if (!SANDBOX_ORDER_STATUSES.includes(status)) throw new RangeError(`unknown order status ${String(status)}`);
    const o = this.mustOrder(orderId);
    this.clearStep(o);
    if (opts.payload !== undefined) o.fulfillment = this.fulfillment(o, opts.payload, opts.deliveryData ?? null);
    this.transition(o, status, true);
    return this.view(o);
  }

  /** Runs every pending timetable step of every order now (steps switched off stay off). */
  advanceAll(): void {
    for (const o of this.ordersById.values()) this.advance(o);
  }

  advanceOrder(orderId: number): SandboxOrderView {
    const o = this.mustOrder(orderId);
    this.advance(o);
    return this.view(o);
  }

  // ------------------------------------------------------------------------------- HTTP plumbing

  private listen(port: number, host: string): Promise<http.Server> {
    const server = http.createServer((req, res) => this.onRequest(req, res));
    server.keepAliveTimeout = 5000;
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        this.servers.add(server);
        this.listener = server;
        resolve(server);
      });
    });
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.route(req, res).catch((err: unknown) => {
      if (this.closed) return;
      if (!res.headersSent) this.write(res, { status: 500, body: errorJson('internal_error', err instanceof Error ? err.message : String(err)) });
      else res.destroy();
    });
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const pathname = q < 0 ? raw : raw.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
    if (pathname === SANDBOX_API_PREFIX || pathname.startsWith(`${SANDBOX_API_PREFIX}/`)) return this.serveApi(req, res, pathname, query);
    if (pathname === SANDBOX_CONTROL_PREFIX || pathname.startsWith(`${SANDBOX_CONTROL_PREFIX}/`)) return this.serveControl(req, res, pathname);
    req.resume();
    this.write(res, { status: 404, body: errorJson('not_found', 'no such path') });
  }

  private write(res: http.ServerResponse, a: Answer): void {
    if (res.writableEnded || res.destroyed) return;
    const headers: Record<string, string | number> = {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(a.body),
      ...a.headers,
    };
    if (this.refusing) headers.connection = 'close';
    res.writeHead(a.status, headers);
    res.end(a.body);
  }

  private resetSocket(req: http.IncomingMessage): void {
    const socket = req.socket;
    if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
    else socket.destroy();
  }

  /** A wait that stop() ends at once (handlers then see `closed` and give up). */
  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.sleeps.delete(t);
        resolve();
      }, ms);
      this.sleeps.set(t, resolve);
    });
  }

  // ----------------------------------------------------------------------------------------- API

  private async serveApi(req: http.IncomingMessage, res: http.ServerResponse, pathname: string, query: URLSearchParams): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const match = this.match(method, pathname.slice(SANDBOX_API_PREFIX.length));
    const operation: SandboxOperation | 'unknown' = match?.operation ?? 'unknown';
    let raw: Buffer;
    try {
      raw = await readBody(req, MAX_BODY_BYTES);
    } catch (err) {
      if (err instanceof BodyTooLargeError) this.write(res, { status: 413, body: errorJson('payload_too_large', 'request body too large') });
      else res.destroy();
      return;
    }
    if (this.closed) return;
    this.stats.totalRequests++;
    this.stats.requests[operation]++;
    if (operation === 'createOrder') this.stats.createsReceived++;
    const base = { operation, method, path: pathname, query: query.toString() };
    this.emitRequest({ ...base, phase: 'received' });
    const done = (outcome: SandboxRequestOutcome, status?: number): void =>
      this.emitRequest({ ...base, phase: 'done', outcome, ...(status !== undefined ? { status } : {}) });
    const answer = (a: Answer): void => {
      this.write(res, a);
      done('answered', a.status);
    };

    if (!match) return answer({ status: 404, body: errorJson('not_found', `no route ${method} ${pathname}`) });

    const rule = this.faults.take(match.operation);
    if (rule) this.stats.faultsApplied++;
    switch (rule?.kind) {
      case 'error_before':
      case 'rate_limit':
      case 'coded_error':
        return answer(this.faultAnswer(rule));
      case 'reset_before':
        this.resetSocket(req);
        return done('reset');
      case 'hang_before':
        return done('hang');
      case 'delay':
        await this.sleep(rule.delayMs ?? 1000);
        if (this.closed) return;
        break;
      default:
        break;
    }

    let result = this.authenticate(req, method, pathname, raw);
    if (!result) {
      if (match.operation !== 'createOrder') {
        await this.sleep(this.faults.latencyMs);
        if (this.closed) return;
      }
      result = await this.work(match, query, raw, rule);
      if (this.closed) return;
    }

    switch (rule?.kind) {
      case 'error_after':
        return answer(this.faultAnswer(rule));
      case 'hang_after':
        return done('hang');
      case 'reset_after':
        this.resetSocket(req);
        return done('reset');
      case 'garbage_after':
        return answer({ status: 200, body: rule.body ?? '{"ok":true,"data":<html><body>502 Bad Gateway</body></html>' });
      default:
        return answer(result);
    }
  }

  private emitRequest(e: SandboxRequestEvent): void {
    this.events.emit('request', e);
  }

  private match(method: string, sub: string): RouteMatch | null {
    for (const r of ROUTES) {
      if (r.method !== method) continue;
      const m = r.re.exec(sub);
      if (m) return { operation: r.operation, id: m[1] ?? null };
    }
    return null;
  }

  private faultAnswer(rule: FaultRule): Answer {
    if (rule.kind === 'rate_limit') {
      return {
        status: 429,
        body: rule.body ?? errorJson(rule.errorCode ?? 'rate_limited', rule.errorMessage ?? 'too many requests'),
        headers: { 'retry-after': String(rule.retryAfterS ?? 1) },
      };
    }
    if (rule.kind === 'coded_error') {
      return { status: rule.status ?? 400, body: rule.body ?? errorJson(rule.errorCode ?? 'bad_request', rule.errorMessage ?? 'refused by a sandbox fault') };
    }
    const status = rule.status ?? 503;
    const code = rule.errorCode ?? (status === 503 ? 'service_unavailable' : status === 502 ? 'bad_gateway' : status === 504 ? 'gateway_timeout' : 'internal_error');
    return { status, body: rule.body ?? errorJson(code, rule.errorMessage ?? 'sandbox fault') };
  }

  private authenticate(req: http.IncomingMessage, method: string, path: string, raw: Buffer): Answer | null {
    const names = signatureHeaderNames(this.config.headerPrefix);
    const header = (name: string): string | undefined => {
      const v = req.headers[name.toLowerCase()];
      return Array.isArray(v) ? v[0] : v;
    };
    const apiKey = header(names.apiKey);
    const timestamp = header(names.timestamp);
    const signature = header(names.signature);
    const refuse = (status: number, code: string, message: string): Answer => ({ status, body: errorJson(code, message) });
    // Dujiao-Next's order (upstream_auth.go): headers (an empty one counts as missing), the timestamp,
    // then the API key (403), then the signature
    if (!apiKey || !timestamp || !signature) return refuse(401, 'missing_auth_headers', 'missing authentication headers');
    // the key is judged after the timestamp: verify with the given one, then compare it with ours
    const result = verifySignature({
      secret: this.config.apiSecret,
      template: this.config.signatureTemplate,
      expectedApiKey: apiKey,
      method,
      path,
      body: raw,
      apiKey,
      timestamp,
      signature,
      nowSeconds: Math.floor(this.clock() / 1000),
      toleranceSeconds: this.config.timestampToleranceS,
    });
    if (!result.ok && result.reason === 'malformed_timestamp') return refuse(401, 'invalid_timestamp', 'invalid timestamp');
    if (!result.ok && result.reason === 'timestamp_out_of_range') return refuse(401, 'timestamp_expired', 'timestamp expired');
    if (!constantTimeEqual(apiKey, this.config.apiKey)) return refuse(403, 'invalid_api_key', 'api key is invalid or disabled');
    // upstream-api.md §5: the signature is lower-case hex; one the upstream would refuse is refused here too
    if (!result.ok || /[A-F]/.test(signature)) return refuse(401, 'invalid_signature', 'signature verification failed');
    return null;
  }

  private async work(match: RouteMatch, query: URLSearchParams, raw: Buffer, rule: FaultRule | undefined): Promise<Answer> {
    try {
      switch (match.operation) {
        case 'ping':
          return this.ok({
            ok: true,
            site_name: this.config.siteName,
            protocol_version: '1.0',
            user_id: this.config.userId,
            balance: formatMoney(this.balanceCents),
            currency: this.config.currency,
            member_level: this.config.memberLevel,
          });
        case 'categories':
          return { status: 200, body: `{"ok":true,"categories":${this.catalog.categoriesJson()}}` };
        case 'products':
          return this.listProducts(query);
        case 'product':
          return this.getProduct(parseId(match.id, 'product id'));
        case 'createOrder':
          return await this.createOrder(raw, rule);
        case 'getOrder': {
          const o = this.ordersById.get(parseId(match.id, 'order id'));
          if (!o) throw new ApiError(404, 'order_not_found', 'no such order');
          return this.ok(this.detail(o));
        }
        case 'cancelOrder':
          return this.cancelOrder(parseId(match.id, 'order id'));
      }
    } catch (err) {
      if (err instanceof ApiError) return { status: err.status, body: errorJson(err.code, err.message) };
      throw err;
    }
  }

  private ok(body: object): Answer {
    return { status: 200, body: JSON.stringify(body) };
  }

  private listProducts(query: URLSearchParams): Answer {
    const page = parseQueryInt(query.get('page'), 1, 'page');
    const size = Math.min(parseQueryInt(query.get('page_size'), 20, 'page_size'), this.config.pageSizeCap);
    let after: number | undefined;
    const rawAfter = query.get('updated_after');
    if (rawAfter !== null && rawAfter !== '') {
      // An unencoded '+' of an offset arrives as a space.
      const text = rawAfter.replace(' ', '+');
      after = RFC3339_RE.test(text) ? Date.parse(text) : NaN;
      if (Number.isNaN(after)) throw bad('updated_after must be an RFC 3339 date-time');
    }
    const filter = this.faults.updatedAfterFilter;
    const { items, total, firstId } = this.catalog.page(page, size, filter === 'ignored' ? undefined : after, filter === 'inclusive_seconds');
    const body = `{"ok":true,"items":[${items.join(',')}],"total":${total},"page":${page},"page_size":${size}}`;
    if (this.faults.takeInsertAtFront(page)) this.catalog.insertAtFront();
    if (this.faults.takeWithdraw(page) && firstId !== null) this.catalog.delistProduct(firstId);
    return { status: 200, body };
  }

  private getProduct(id: number): Answer {
    const p = this.catalog.productRecord(id);
    if (!p) throw new ApiError(404, 'product_not_found', 'no such product');
    if (!p.listed) throw new ApiError(404, 'product_unavailable', 'the product is withdrawn');
    return { status: 200, body: `{"ok":true,"product":${this.catalog.productJson(p)}}` };
  }

  /**
   * Check-then-insert, as the real upstream: the `downstream_order_no` check, then the configured
   * latency, then the checks of the SKU and the insert. Two concurrent creates with one number can
   * therefore both create. With `paysInCreate` (profile `dujiao-next`) the order is paid in the call
   * and the answer says `paid`; a `payment_failed` order (the fault, or with `lowBalance`
   * `payment_failed` a wallet that cannot pay) is canceled and named in the refusal.
   */
  private async createOrder(raw: Buffer, rule: FaultRule | undefined): Promise<Answer> {
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
      if (existing) return this.ok(this.createdShape(existing));
    }

    await this.sleep(this.faults.latencyMs);
    if (this.closed) return { status: 503, body: errorJson('service_unavailable', 'stopped') };

    const sku = this.catalog.skuRecord(input.sku_id);
    if (!sku || !sku.isActive) throw new ApiError(400, 'sku_unavailable', 'the SKU does not exist or is disabled');
    const product = this.catalog.productRecord(sku.productId);
    if (!product || !product.listed) throw new ApiError(400, 'product_unavailable', 'the product is unavailable');
    if (product.fulfillmentType === 'manual') {
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
    const failureMessage = rule?.kind === 'payment_failed' ? (rule.errorMessage ?? 'payment failed') : 'wallet payment failed: insufficient balance';

    const seq = ++this.orderSeq;
    const now = this.clock();
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
      createdAt: now,
      startedAt: performance.now(),
      timetable: { ...this.currentTimetable },
      step: null,
      charged: !paymentFails,
    };
    this.ordersById.set(o.id, o);
    if (this.config.dedupeDownstreamOrderNo && dno !== undefined && !this.byDownstreamNo.has(dno)) this.byDownstreamNo.set(dno, o.id);
    this.stats.createsExecuted++;
    if (paymentFails) {
      this.emitOrder(o, null);
      // Dujiao-Next cancels the order whose wallet payment failed and names it in the refusal
      return {
        status: 200,
        body: JSON.stringify({
          ok: false,
          error_code: 'payment_failed',
          error_message: failureMessage,
          order_id: o.id,
          order_no: o.orderNo,
          status: o.status,
        }),
      };
    }
    this.balanceCents -= amount;
    this.catalog.takeStock(sku, input.quantity);
    this.emitOrder(o, null);
    // Dujiao-Next pays the order from the wallet inside the create call (and calls the payment back)
    if (this.config.paysInCreate) this.transition(o, 'paid');
    this.scheduleNext(o);
    return this.ok(this.createdShape(o));
  }

  private cancelOrder(id: number): Answer {
    const o = this.ordersById.get(id);
    if (!o) throw new ApiError(404, 'order_not_found', 'no such order');
    if (!this.config.cancelableStatuses.includes(o.status)) throw new ApiError(409, 'cancel_not_allowed', `an order in ${o.status} cannot be canceled`);
    this.clearStep(o);
    if (o.charged) {
      this.balanceCents += o.amountCents - o.refundedCents;
      this.catalog.returnStock(o.skuId, o.quantity);
    }
    this.stats.cancelsExecuted++;
    this.transition(o, 'canceled');
    return this.ok({ ok: true, order_id: o.id, order_no: o.orderNo, status: 'canceled' });
  }

  // -------------------------------------------------------------------------------------- orders

  private mustOrder(orderId: number): OrderRecord {
    const o = this.ordersById.get(orderId);
    if (!o) throw new RangeError(`unknown order ${orderId}`);
    return o;
  }

  private fulfillment(o: OrderRecord, payload: string, deliveryData: Record<string, unknown> | null): SandboxFulfillment {
    return { type: o.fulfillmentType, status: 'delivered', payload, delivery_data: deliveryData, delivered_at: new Date(this.clock()).toISOString() };
  }

  /** Moves an order; every change is emitted and, with a callback_url, called back. */
  private transition(o: OrderRecord, to: SandboxOrderStatus, evenIfSame = false): void {
    const from = o.status;
    if (from === to && !evenIfSame) return;
    o.status = to;
    o.history.push(to);
    if ((to === 'delivered' || to === 'completed') && !o.fulfillment) o.fulfillment = this.fulfillment(o, autoPayload(o), null);
    this.emitOrder(o, from);
    if (o.callbackUrl) this.callbacks.dispatch(o.callbackUrl, this.callbackBody(o));
  }

  private emitOrder(o: OrderRecord, from: SandboxOrderStatus | null): void {
    if (this.events.listenerCount('order') === 0) return;
    const e: SandboxOrderEvent = { orderId: o.id, from, to: o.status, order: this.view(o) };
    this.events.emit('order', e);
  }

  private clearStep(o: OrderRecord): void {
    if (o.step) clearTimeout(o.step);
    o.step = null;
  }

  /** Arms the timer of the order's next timetable step, if it has one that is switched on. */
  private scheduleNext(o: OrderRecord): void {
    this.clearStep(o);
    if (this.closed) return;
    const step = CHAIN.find((s) => s.from === o.status);
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

  private runStep(o: OrderRecord): void {
    const step = CHAIN.find((s) => s.from === o.status);
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
    if (o.refundedCents > 0n || o.status === 'refunded' || o.status === 'partially_refunded') d.refunded_amount = formatMoney(o.refundedCents);
    return d;
  }

  private callbackBody(o: OrderRecord): SandboxCallbackBody {
    return {
      event: o.status === 'delivered' || o.status === 'completed' ? 'order.fulfilled' : 'order.status_changed',
      order_id: o.id,
      order_no: o.orderNo,
      ...(o.downstreamOrderNo !== null ? { downstream_order_no: o.downstreamOrderNo } : {}),
      status: o.status,
      ...(o.fulfillment ? { fulfillment: { ...o.fulfillment } } : {}),
      timestamp: Math.floor(this.clock() / 1000),
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

  // ------------------------------------------------------------------------------------- control

  private async serveControl(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const sub = pathname.slice(SANDBOX_CONTROL_PREFIX.length).replace(/\/+$/, '');
    let raw: Buffer;
    try {
      raw = await readBody(req, MAX_BODY_BYTES);
    } catch {
      res.destroy();
      return;
    }
    if (this.closed) return;
    try {
      let body: Record<string, unknown> = {};
      if (raw.length > 0) {
        const parsed: unknown = JSON.parse(raw.toString('utf8'));
        if (!isPlainObject(parsed)) throw new RangeError('the body must be a JSON object');
        body = parsed;
      }
      const result = this.control(method, sub, body);
      if (result === null) return this.write(res, { status: 404, body: errorJson('not_found', `no control route ${method} ${pathname}`) });
      this.write(res, { status: 200, body: JSON.stringify({ ok: true, ...result }) });
    } catch (err) {
      this.write(res, { status: 400, body: errorJson('bad_request', err instanceof Error ? err.message : String(err)) });
    }
  }

  private control(method: string, sub: string, body: Record<string, unknown>): Record<string, unknown> | null {
    const str = (key: string): string => {
      const v = body[key];
      if (typeof v !== 'string') throw new RangeError(`${key} must be a string`);
      return v;
    };
    const int = (key: string): number => {
      const v = body[key];
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new RangeError(`${key} must be an integer`);
      return v;
    };
    const orderRoute = /^\/orders\/(\d+)\/(deliver|refund|status)$/.exec(sub);
    if (method === 'POST' && orderRoute) {
      const id = Number(orderRoute[1]);
      switch (orderRoute[2]) {
        case 'deliver': {
          const o = this.mustOrder(id);
          const payload = body.payload === undefined ? autoPayload(o) : str('payload');
          const data = isPlainObject(body.delivery_data) ? body.delivery_data : null;
          return { order: this.deliverManual(id, payload, data) };
        }
        case 'refund':
          return { order: this.refundOrder(id, body.amount === undefined ? undefined : str('amount')) };
        default:
          return {
            order: this.setOrderStatus(id, str('status') as SandboxOrderStatus, body.payload === undefined ? {} : { payload: str('payload') }),
          };
      }
    }
    switch (`${method} ${sub}`) {
      case 'GET /state':
        return {
          wallet: { balance: this.walletBalance(), currency: this.config.currency },
          counts: {
            products: this.catalog.productCount,
            listed_products: this.catalog.listedCount,
            skus: this.catalog.skuCount,
            orders: this.ordersById.size,
            callbacks: this.callbacks.log.length,
            held_callbacks: this.callbacks.heldCount(),
          },
          stats: this.stats,
          faults: this.faults.snapshot(),
          timetable: this.currentTimetable,
          api: { base_url: this.baseUrl, header_prefix: this.config.headerPrefix, profile: this.config.profile },
        };
      case 'GET /orders':
        return { orders: this.orders() };
      case 'GET /callbacks':
        return { callbacks: this.callbacks.log };
      case 'POST /reset':
        this.reset();
        return {};
      case 'POST /faults':
        this.faults.set(body as Partial<FaultSettings>);
        return { faults: this.faults.snapshot() };
      case 'POST /faults/reset':
        this.faults.reset();
        return { faults: this.faults.snapshot() };
      case 'POST /faults/rules':
        this.faults.add(body as unknown as FaultRule);
        return { faults: this.faults.snapshot() };
      case 'POST /connections/refuse': {
        const ms = body.ms === undefined ? 5000 : int('ms');
        void this.refuseConnections();
        const t = setTimeout(() => {
          this.controlTimers.delete(t);
          void this.acceptConnections();
        }, ms);
        this.controlTimers.add(t);
        return { reopen_in_ms: ms };
      }
      case 'POST /timetable':
        this.setTimetable(body as Partial<SandboxTimetable>);
        return { timetable: this.currentTimetable };
      case 'POST /advance':
        this.advanceAll();
        return {};
      case 'POST /callbacks/flush':
        this.flushHeldCallbacks();
        return {};
      case 'POST /wallet':
        this.setWalletBalance(str('balance'));
        return { balance: this.walletBalance() };
      case 'POST /catalog/price':
        this.catalog.setPrice(str('sku_code'), str('price'));
        return { sku: this.catalog.getSku(str('sku_code'))?.sku };
      case 'POST /catalog/stock':
        this.catalog.setStock(str('sku_code'), str('stock_status') as SandboxStockStatus, body.stock_quantity === undefined ? undefined : int('stock_quantity'));
        return { sku: this.catalog.getSku(str('sku_code'))?.sku };
      case 'POST /catalog/sku-active':
        if (typeof body.is_active !== 'boolean') throw new RangeError('is_active must be a boolean');
        this.catalog.setSkuActive(str('sku_code'), body.is_active);
        return { sku: this.catalog.getSku(str('sku_code'))?.sku };
      case 'POST /catalog/sku-id':
        return { sku_id: this.catalog.changeSkuId(str('sku_code')) };
      case 'POST /catalog/remove-sku':
        this.catalog.removeSku(str('sku_code'));
        return {};
      case 'POST /catalog/delist':
        this.catalog.delistProduct(int('product_id'));
        return {};
      case 'POST /catalog/relist':
        this.catalog.relistProduct(int('product_id'));
        return {};
      case 'POST /catalog/products':
        return { product: this.catalog.addProduct(body as AddProductInput) };
      case 'POST /catalog/insert-at-front':
        return { product: this.catalog.insertAtFront(body as AddProductInput) };
      case 'POST /catalog/duplicate-sku-code': {
        const r = this.catalog.duplicateSkuCode(str('sku_code'));
        return { product_id: r.productId, sku_id: r.skuId };
      }
      case 'POST /catalog/touch':
        return { product_ids: this.catalog.touchProducts(int('n')) };
      default:
        return null;
    }
  }
}
