/**
 * The sandbox upstream: a faithful simulator of the upstream purchasing API (shared/upstream-api.md)
 * with the real upstream's known behaviour (CONTRACT §4), as a real HTTP server on `node:http` so that
 * faults can touch sockets. Used in-process by the service's tests (port 0) and its zero-config start,
 * and alone by shop developers (`relay sandbox`).
 *
 * This file is the transport (node:http, body reading, routing, fault answers), the authentication
 * and the composition; the order world is sandbox-orders.ts, the control API sandbox-control.ts, the
 * settings and their defaults sandbox-config.ts, the catalog sandbox-catalog.ts, the limiter's place
 * (admission, 429 answer, log) sandbox-limiter-gate.ts.
 *
 * API under `/api/v1/upstream` (every request signed, see src/signing):
 *   POST /ping · GET /categories · GET /products?page&page_size&updated_after&include_inactive · GET /products/{id}
 *   POST /orders · GET /orders/{id} · POST /orders/{id}/cancel
 * Authentication refusals as Dujiao-Next's (checked in this order): 401 missing_auth_headers, 401
 * invalid_timestamp, 401 timestamp_expired, 403 invalid_api_key, 401 invalid_signature. Before them,
 * with the option `rateLimit`, Dujiao-Next's limiter: 429 `{"status_code":429,"msg":"…","data":
 * {"request_id":"…"}}` without Retry-After (sandbox-rate-limit.ts).
 *
 * Control API under `/__sandbox/` (no authentication; JSON in, JSON `{ok, …}` out; 400 bad_request on
 * an invalid body), for shop developers driving a standalone sandbox with curl: its routes are listed
 * in the header of sandbox-control.ts.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { matchApiRoute, runOperation, type ApiContext } from './sandbox-api.js';
import { authenticate } from './sandbox-auth.js';
import { CallbackDispatcher, type CallbackLogEntry } from './sandbox-callbacks.js';
import { SandboxCatalog } from './sandbox-catalog.js';
import { SANDBOX_UPLOADS_PREFIX } from './sandbox-catalog-seed.js';
import { SandboxMedia } from './sandbox-media.js';
import {
  DEFAULT_SANDBOX_TIMETABLE,
  resolveSandboxConfig,
  SANDBOX_API_PREFIX,
  SANDBOX_CONTROL_PREFIX,
  type SandboxConfig,
  type SandboxCredentials,
} from './sandbox-config.js';
import { controlRoute, type SandboxControlTarget } from './sandbox-control.js';
import { faultAnswer, SandboxFaults } from './sandbox-faults.js';
import { BodyTooLargeError, errorJson, isPlainObject, MAX_BODY_BYTES, readBody, type Answer } from './sandbox-http.js';
import { SandboxOrders } from './sandbox-orders.js';
import { SandboxLimiterGate } from './sandbox-limiter-gate.js';
import type { RateLimitKeyState } from './sandbox-rate-limit.js';
import {
  emptySandboxStats,
  type SandboxOperation,
  type SandboxRateLimit,
  type SandboxRateLimitEntry,
  type SandboxOptions,
  type SandboxOrderStatus,
  type SandboxOrderView,
  type SandboxRequestEvent,
  type SandboxRequestOutcome,
  type SandboxStats,
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
  SandboxRateLimit,
  SandboxRateLimitEntry,
} from './sandbox.types.js';
export type { FaultRule, FaultSettings, FaultKind, FaultOperation, CallbackFaultMode } from './sandbox-faults.js';
export type { CallbackLogEntry } from './sandbox-callbacks.js';
export type { AddProductInput, FindSkuFilter, FoundSku } from './sandbox-catalog.js';
export type { SandboxConfig, SandboxCredentials } from './sandbox-config.js';
export {
  SANDBOX_API_PREFIX,
  SANDBOX_CONTROL_PREFIX,
  DUJIAO_NEXT_CALLBACK_PATH,
  DEFAULT_SANDBOX_TIMETABLE,
  DEFAULT_CALLBACK_RETRY_DELAYS_MS,
  DUJIAO_NEXT_RATE_LIMIT,
} from './sandbox-config.js';

export class SandboxServer {
  readonly config: Readonly<SandboxConfig>;
  readonly faults = new SandboxFaults();
  readonly catalog: SandboxCatalog;
  /** Its own images (product and content images), and the answers a test switches them to. */
  readonly media = new SandboxMedia();
  /** Emits 'request' (SandboxRequestEvent), 'order' (SandboxOrderEvent), 'callback' (CallbackLogEntry). */
  readonly events = new EventEmitter();
  readonly stats: SandboxStats;

  private readonly clock: () => number;
  private readonly callbacks: CallbackDispatcher;
  private readonly world: SandboxOrders;
  private readonly api: ApiContext;
  private readonly control: SandboxControlTarget;
  private readonly limiter: SandboxLimiterGate;

  private readonly servers = new Set<http.Server>();
  private listener: http.Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly sleeps = new Map<NodeJS.Timeout, () => void>();
  /** Requests held by a `hold_before` rule, oldest first: each one's release. */
  private held: Array<() => void> = [];
  private readonly controlTimers = new Set<NodeJS.Timeout>();
  private host = '127.0.0.1';
  private port: number | null = null;
  private refusing = false;
  private closed = false;

  constructor(options: SandboxOptions = {}) {
    this.config = resolveSandboxConfig(options);
    const cfg = this.config;
    this.events.setMaxListeners(0);
    this.clock = options.clock ?? Date.now;
    this.catalog = new SandboxCatalog(cfg.catalogProducts, cfg.catalogSeed, this.clock, cfg.servesInactiveSkus);
    this.stats = emptySandboxStats();
    this.limiter = new SandboxLimiterGate(cfg.rateLimit, cfg.headerPrefix, this.stats);
    this.world = new SandboxOrders({
      config: cfg,
      clock: this.clock,
      catalog: this.catalog,
      faults: this.faults,
      stats: this.stats,
      events: this.events,
      sleep: (ms) => this.sleep(ms),
      isClosed: () => this.closed,
      dispatchCallback: (url, body) => this.callbacks.dispatch(url, body),
      initialTimetable: { ...DEFAULT_SANDBOX_TIMETABLE, ...options.timetable },
    });
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
        current: (orderId) => this.world.currentCallbackBody(orderId),
      },
      this.faults,
      this.stats,
      this.events,
    );
    this.api = { config: cfg, catalog: this.catalog, faults: this.faults, world: this.world };
    this.control = {
      server: this,
      orderCount: () => this.world.count,
      heldCallbacks: () => this.callbacks.heldCount(),
      refuseFor: (ms) => {
        void this.refuseConnections();
        const t = setTimeout(() => {
          this.controlTimers.delete(t);
          void this.acceptConnections();
        }, ms);
        this.controlTimers.add(t);
      },
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
    this.world.stopTimers();
    for (const t of this.controlTimers) clearTimeout(t);
    this.controlTimers.clear();
    this.callbacks.stop();
    for (const [t, wake] of this.sleeps) {
      clearTimeout(t);
      wake();
    }
    this.sleeps.clear();
    this.releaseHeld();
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

  /** Everything back to the start: catalog, wallet, orders, timetable, faults, limiter, stats, callback log. */
  reset(): void {
    this.world.reset();
    this.limiter.reset();
    this.userDisabled = false;
    this.catalog.regenerate();
    this.faults.reset();
    this.releaseHeld();
    this.callbacks.clear();
    this.media.clear();
    this.media.resetStats();
    this.resetStats();
  }

  resetStats(): void {
    const fresh = emptySandboxStats();
    Object.assign(this.stats.requests, fresh.requests);
    Object.assign(this.stats.rateLimited, fresh.rateLimited);
    const { requests: _requests, rateLimited: _rateLimited, ...counters } = fresh;
    Object.assign(this.stats, counters);
  }

  // ------------------------------------------------------------------------------ observability

  /** Every try of every callback, in the order they finished. */
  get callbackLog(): readonly CallbackLogEntry[] {
    return this.callbacks.log;
  }

  /** The API user is disabled: every authenticated request is answered 403 user_disabled (until enabled again or reset). */
  userDisabled = false;

  /** The limiter's rule now (null: off). */
  get rateLimit(): SandboxRateLimit | null {
    return this.limiter.rule;
  }

  /** Switches the limiter on with a rule (its counters start empty) or off (null). */
  setRateLimit(rule: SandboxRateLimit | null): void {
    this.limiter.set(rule);
  }

  /** The limiter's live counters; [] when off (SandboxLimiterGate.state). */
  rateLimitState(): RateLimitKeyState[] {
    return this.limiter.state();
  }

  /** Every API request that reached the limiter's place, admitted or not (SandboxLimiterGate.log). */
  rateLimitLog(): readonly SandboxRateLimitEntry[] {
    return this.limiter.log;
  }

  /** performance.now() of every admitted API request in rateLimitLog(), oldest first. */
  admittedTimes(): number[] {
    return this.limiter.admittedTimes();
  }

  /** Every order, oldest first. */
  orders(): SandboxOrderView[] {
    return this.world.list();
  }

  order(orderId: number): SandboxOrderView | undefined {
    return this.world.get(orderId);
  }

  walletBalance(): string {
    return this.world.walletBalance();
  }

  setWalletBalance(balance: string): void {
    this.world.setWalletBalance(balance);
  }

  get timetable(): Readonly<SandboxTimetable> {
    return { ...this.world.timetable };
  }

  /** Changes the timetable of orders created from now on. */
  setTimetable(partial: Partial<SandboxTimetable>): void {
    this.world.setTimetable(partial);
  }

  /** Resolves when the order reaches the status (at once if it is there). */
  waitForOrderStatus(orderId: number, status: SandboxOrderStatus, timeoutMs = 5000): Promise<SandboxOrderView> {
    return this.world.waitForStatus(orderId, status, timeoutMs);
  }

  /** Sends the callback snapshots held by the `reorder` fault (of one order, or all), newest first. */
  flushHeldCallbacks(orderId?: number): void {
    this.callbacks.flushHeld(orderId);
  }

  // --------------------------------------------------------------------------- operator helpers

  /**
   * The upstream gives money back: the whole remaining amount (→ `refunded`) or a part of it
   * (→ `partially_refunded`; repeated parts add up to `refunded`). The wallet is credited. The change
   * is called back when `callback` says so, by default when the `refundCallbacks` option does (not
   * under `dujiao-next`: its admin refund sends no callback).
   */
  refundOrder(orderId: number, amount?: string, opts: { callback?: boolean } = {}): SandboxOrderView {
    return this.world.refund(orderId, amount, opts.callback);
  }

  /** Delivers an order (a manual one waits at `fulfilling` for this): → `delivered`, then the timetable's `completed`. */
  deliverManual(orderId: number, payload: string, deliveryData: Record<string, unknown> | null = null): SandboxOrderView {
    return this.world.deliverManual(orderId, payload, deliveryData);
  }

  /** The payload the sandbox delivers an auto order with (one line per unit). */
  autoPayload(orderId: number): string {
    return this.world.autoPayloadOf(orderId);
  }

  /**
   * Puts an order in any status (stops its timetable). No wallet or stock effect. With `payload`, or
   * when moving to delivered/completed without a fulfillment, the order gets one.
   */
  setOrderStatus(
    orderId: number,
    status: SandboxOrderStatus,
    opts: { payload?: string; deliveryData?: Record<string, unknown> | null } = {},
  ): SandboxOrderView {
    return this.world.setStatus(orderId, status, opts);
  }

  /** Runs every pending timetable step of every order now (steps switched off stay off). */
  advanceAll(): void {
    this.world.advanceAll();
  }

  advanceOrder(orderId: number): SandboxOrderView {
    return this.world.advanceOrder(orderId);
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
      if (!res.headersSent)
        this.write(res, { status: 500, body: errorJson('internal_error', err instanceof Error ? err.message : String(err)) });
      else res.destroy();
    });
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const pathname = q < 0 ? raw : raw.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
    if (pathname === SANDBOX_API_PREFIX || pathname.startsWith(`${SANDBOX_API_PREFIX}/`)) return this.serveApi(req, res, pathname, query);
    if (pathname === SANDBOX_CONTROL_PREFIX || pathname.startsWith(`${SANDBOX_CONTROL_PREFIX}/`))
      return this.serveControl(req, res, pathname);
    if (pathname.startsWith(`${SANDBOX_UPLOADS_PREFIX}/`) && (req.method === 'GET' || req.method === 'HEAD'))
      return this.media.serve(req, res, pathname);
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

  /** Requests held by a `hold_before` rule and not released yet. */
  get heldRequests(): number {
    return this.held.length;
  }

  /**
   * Lets the oldest `n` held requests (default: every one) go on: each does its work and answers.
   * Returns how many were released. stop() releases them too (they then see `closed` and give up).
   */
  releaseHeld(n = Number.POSITIVE_INFINITY): number {
    const released = this.held.splice(0, n);
    for (const release of released) release();
    return released.length;
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
      const result = controlRoute(this.control, method, sub, body);
      if (result === null) return this.write(res, { status: 404, body: errorJson('not_found', `no control route ${method} ${pathname}`) });
      this.write(res, { status: 200, body: JSON.stringify({ ok: true, ...result }) });
    } catch (err) {
      this.write(res, { status: 400, body: errorJson('bad_request', err instanceof Error ? err.message : String(err)) });
    }
  }

  // ----------------------------------------------------------------------------------------- API

  private async serveApi(req: http.IncomingMessage, res: http.ServerResponse, pathname: string, query: URLSearchParams): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const match = matchApiRoute(method, pathname.slice(SANDBOX_API_PREFIX.length));
    const operation: SandboxOperation | 'unknown' = match?.operation ?? 'unknown';
    let raw: Buffer;
    try {
      raw = await readBody(req, MAX_BODY_BYTES);
    } catch (err) {
      if (err instanceof BodyTooLargeError)
        this.write(res, { status: 413, body: errorJson('payload_too_large', 'request body too large') });
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

    const rule = this.faults.take(match.operation, match.id);
    if (rule) this.stats.faultsApplied++;
    switch (rule?.kind) {
      case 'error_before':
      case 'rate_limit':
      case 'coded_error':
        return answer(faultAnswer(rule));
      case 'reset_before':
        this.resetSocket(req);
        return done('reset');
      case 'hang_before':
        return done('hang');
      case 'delay':
        await this.sleep(rule.delayMs ?? 1000);
        if (this.closed) return;
        break;
      case 'hold_before':
        await new Promise<void>((resolve) => this.held.push(resolve));
        if (this.closed) return;
        break;
      default:
        break;
    }

    let result =
      this.limiter.admit(req, match.operation) ?? authenticate(this.config, this.clock(), req, method, pathname, raw, this.userDisabled);
    if (!result) {
      if (match.operation !== 'createOrder') {
        await this.sleep(this.faults.latencyMs);
        if (this.closed) return;
      }
      result = await runOperation(this.api, match, query, raw, rule);
      if (this.closed) return;
    }

    switch (rule?.kind) {
      case 'error_after':
        return answer(faultAnswer(rule));
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
}
