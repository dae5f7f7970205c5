/**
 * The HTTP adapter of the upstream port (axios over keep-alive agents).
 *
 * Every request is signed over the path with the base URL's prefix (no query string) and the exact body
 * bytes sent. Every answer is classified once (see `upstream-http.classification.ts`):
 * definitive (a coded refusal), retryable (nothing reached the upstream, or 429) or unknown.
 *
 * Connect timeout vs response timeout: the adapter runs two timers of its own per request and watches
 * the socket. A request counts as connected when its socket emits `connect` (`secureConnect` for TLS),
 * when it got a reused keep-alive socket, or once the request was flushed or a response began. The
 * connect timer (`connectTimeoutMs`) aborts only a request that is not connected: retryable
 * `connect_timeout`. The response timer (`timeoutMs`, from the start) aborts the rest: unknown
 * `response_timeout` when connected, else retryable `connect_timeout`.
 */
import { hash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { performance } from 'node:perf_hooks';
import axios, { type AxiosInstance } from 'axios';
import { signedHeaders } from '../signing/signing.js';
import { UpstreamClient } from './upstream.client.js';
import { UpstreamUnknownError, isUpstreamError, type UpstreamError } from './upstream.errors.js';
import {
  classifyHttpAnswer,
  transportFailure,
  type HttpAnswer,
  type TransportState,
} from './upstream-http.classification.js';
import {
  isUpstreamCanceledOrder,
  isUpstreamCategory,
  isUpstreamCreatedOrder,
  isUpstreamOrder,
  isUpstreamPing,
  isUpstreamProduct,
  isUpstreamProductPage,
} from './upstream.shapes.js';
import type {
  ProductPageQuery,
  UpstreamCanceledOrder,
  UpstreamCategory,
  UpstreamCreateOrderRequest,
  UpstreamCreatedOrder,
  UpstreamOrder,
  UpstreamPing,
  UpstreamProduct,
  UpstreamProductPage,
} from './upstream.types.js';

export { classifyTransportError, parseRetryAfter } from './upstream-http.classification.js';

export type UpstreamCallOutcome = 'ok' | 'definitive' | 'retryable' | 'unknown';

export interface UpstreamCallEvent {
  operation: string;
  outcome: UpstreamCallOutcome;
  durationMs: number;
  httpStatus?: number;
}

export interface UpstreamHttpOptions {
  /** Includes the path prefix, e.g. `https://shop.example/api/v1/upstream`. */
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  /** `Service`, `Dujiao-Next` or custom: headers `<prefix>-Api-Key`, `-Timestamp`, `-Signature`. */
  headerPrefix: string;
  /** Already parsed (real newlines). */
  signatureTemplate: string;
  /** UPSTREAM_TIMEOUT_MS: the whole request, from start to the last byte of the answer. */
  timeoutMs: number;
  /** Default `min(timeoutMs, 3000)`. */
  connectTimeoutMs?: number;
  /** Milliseconds since the epoch, for the timestamp header (and Retry-After dates). */
  clock?: () => number;
  /** Metrics hook, called once per call. Must not throw (errors are swallowed). */
  onCall?: (e: UpstreamCallEvent) => void;
  /** An idle kept-alive socket is closed after this long. Default 4000 (below Node's 5 s server default). */
  keepAliveIdleMs?: number;
  /** Largest answer accepted; a larger one is an unknown outcome. Default 32 MiB. */
  maxResponseBytes?: number;
}

type HttpMethod = 'GET' | 'POST';

interface RequestSpec {
  operation: string;
  method: HttpMethod;
  /** Relative to the base URL, e.g. `/products/12`. */
  path: string;
  query?: URLSearchParams;
  /** Exact bytes to send and sign; `undefined` for a GET. */
  body?: Buffer;
  /** The caller's: aborting it ends the call at once (unknown outcome, reason `aborted`). */
  signal?: AbortSignal;
  /** Adds the SHA-256 of the response body as received to the parsed answer, as `digest`. */
  digest?: boolean;
  /** With `digest`: the answer for a body with this digest, if the caller knows it (then it is not parsed). */
  remembered?: (digest: string) => unknown;
}

const EMPTY_BODY = Buffer.alloc(0);

/** RFC 3339 in UTC, truncated to the second (an earlier instant only widens an `updated_after` filter). */
export function toRfc3339Seconds(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function positiveId(id: number, what: string): string {
  if (!Number.isSafeInteger(id) || id < 1) throw new RangeError(`${what} must be an integer ≥ 1, got ${String(id)}`);
  return String(id);
}

export class UpstreamHttpClient extends UpstreamClient {
  private readonly origin: string;
  /** The base URL's path, without a trailing slash (e.g. `/api/v1/upstream`). */
  private readonly basePath: string;
  private readonly connectTimeoutMs: number;
  private readonly clock: () => number;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly axios: AxiosInstance;

  constructor(private readonly options: UpstreamHttpOptions) {
    super();
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`upstream baseUrl must be http(s), got ${url.protocol}`);
    }
    if (!(options.timeoutMs > 0) || !Number.isFinite(options.timeoutMs)) {
      throw new Error(`upstream timeoutMs must be a positive number, got ${String(options.timeoutMs)}`);
    }
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.connectTimeoutMs = Math.max(1, options.connectTimeoutMs ?? Math.min(options.timeoutMs, 3000));
    this.clock = options.clock ?? Date.now;
    const agentOptions = { keepAlive: true, timeout: options.keepAliveIdleMs ?? 4000 };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    this.axios = axios.create({
      httpAgent: this.httpAgent,
      httpsAgent: this.httpsAgent,
      // Environment proxies would make "connected" mean "connected to the proxy".
      proxy: false,
      maxRedirects: 0,
      responseType: 'arraybuffer',
      transformRequest: [(data: unknown) => data],
      transformResponse: [(data: unknown) => data],
      validateStatus: () => true,
      maxContentLength: options.maxResponseBytes ?? 32 * 1024 * 1024,
    });
  }

  override async ping(signal?: AbortSignal): Promise<UpstreamPing> {
    return this.call({ operation: 'ping', method: 'POST', path: '/ping', body: EMPTY_BODY, signal }, isUpstreamPing);
  }

  override async listCategories(signal?: AbortSignal): Promise<UpstreamCategory[]> {
    const answer = await this.call(
      { operation: 'listCategories', method: 'GET', path: '/categories', signal },
      (v): v is { ok: true; categories: UpstreamCategory[] } =>
        Array.isArray((v as { categories?: unknown }).categories) &&
        (v as { categories: unknown[] }).categories.every(isUpstreamCategory),
    );
    return answer.categories;
  }

  override async listProducts(query: ProductPageQuery, signal?: AbortSignal): Promise<UpstreamProductPage> {
    const params = new URLSearchParams({ page: String(query.page), page_size: String(query.pageSize) });
    if (query.updatedAfter) params.set('updated_after', toRfc3339Seconds(query.updatedAfter));
    return this.call(
      { operation: 'listProducts', method: 'GET', path: '/products', query: params, signal, digest: query.digest === true, remembered: query.remembered },
      isUpstreamProductPage,
    );
  }

  override async getProduct(id: number, signal?: AbortSignal): Promise<UpstreamProduct> {
    const answer = await this.call(
      { operation: 'getProduct', method: 'GET', path: `/products/${positiveId(id, 'product id')}`, signal },
      (v): v is { ok: true; product: UpstreamProduct } => isUpstreamProduct((v as { product?: unknown }).product),
    );
    return answer.product;
  }

  override async createOrder(request: UpstreamCreateOrderRequest): Promise<UpstreamCreatedOrder> {
    const body = Buffer.from(JSON.stringify(request), 'utf8');
    return this.call({ operation: 'createOrder', method: 'POST', path: '/orders', body }, isUpstreamCreatedOrder);
  }

  override async getOrder(id: number, signal?: AbortSignal): Promise<UpstreamOrder> {
    return this.call(
      { operation: 'getOrder', method: 'GET', path: `/orders/${positiveId(id, 'order id')}`, signal },
      isUpstreamOrder,
    );
  }

  override async cancelOrder(id: number): Promise<UpstreamCanceledOrder> {
    return this.call(
      { operation: 'cancelOrder', method: 'POST', path: `/orders/${positiveId(id, 'order id')}/cancel`, body: EMPTY_BODY },
      isUpstreamCanceledOrder,
    );
  }

  /** Closes the kept-alive sockets. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** Nest lifecycle hook (called on any provider instance that has it). */
  onModuleDestroy(): void {
    this.close();
  }

  private async call<T>(spec: RequestSpec, isExpected: (v: unknown) => v is T): Promise<T> {
    const started = performance.now();
    let httpStatus: number | undefined;
    try {
      const answer = await this.send(spec);
      httpStatus = answer.status;
      const digest = spec.digest ? hash('sha256', answer.body ?? EMPTY_BODY, 'base64url') : undefined;
      if (digest !== undefined && answer.status === 200 && spec.remembered) {
        // bytes the caller has seen answered before: what they hold is known, nothing to parse
        const known = spec.remembered(digest);
        if (known !== undefined) {
          this.report(spec.operation, 'ok', started, httpStatus);
          return known as T;
        }
      }
      const c = classifyHttpAnswer(spec.operation, answer, this.clock());
      if (!c.ok) throw c.error;
      if (!isExpected(c.body)) throw new UpstreamUnknownError(spec.operation, 'unexpected_shape', answer.status);
      if (digest !== undefined) (c.body as { digest?: string }).digest = digest;
      this.report(spec.operation, 'ok', started, httpStatus);
      return c.body;
    } catch (e: unknown) {
      const err: UpstreamError = isUpstreamError(e)
        ? e
        : new UpstreamUnknownError(spec.operation, `internal_error: ${e instanceof Error ? e.message : String(e)}`);
      this.report(spec.operation, err.failureClass, started, httpStatus);
      throw err;
    }
  }

  private report(operation: string, outcome: UpstreamCallOutcome, started: number, httpStatus: number | undefined): void {
    if (!this.options.onCall) return;
    try {
      this.options.onCall({
        operation,
        outcome,
        durationMs: performance.now() - started,
        ...(httpStatus === undefined ? {} : { httpStatus }),
      });
    } catch {
      // a metrics hook never breaks a call
    }
  }

  /** Sends one signed request; resolves with any complete HTTP answer, rejects with a transport failure. */
  private async send(spec: RequestSpec): Promise<HttpAnswer> {
    if (spec.signal?.aborted) throw new UpstreamUnknownError(spec.operation, 'aborted');
    const signedPath = `${this.basePath}${spec.path}`;
    const query = spec.query?.toString() ?? '';
    const url = `${this.origin}${signedPath}${query === '' ? '' : `?${query}`}`;
    const body = spec.body;
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      Accept: 'application/json',
      ...signedHeaders(this.options.headerPrefix, this.options.apiSecret, this.options.signatureTemplate, {
        apiKey: this.options.apiKey,
        timestamp: Math.floor(this.clock() / 1000),
        method: spec.method,
        path: signedPath,
        body: body ?? EMPTY_BODY,
      }),
    };

    const state: TransportState = { connected: false, requestWritten: false };
    const controller = new AbortController();
    let req: http.ClientRequest | undefined;
    let socket: Socket | undefined;
    let bytesBefore: number | undefined;
    let flushed = false;

    const abortFor = (kind: 'connect' | 'response'): void => {
      if (state.timedOut !== undefined) return;
      state.timedOut = kind;
      controller.abort();
      req?.destroy();
    };
    const connectTimer = setTimeout(() => {
      if (!state.connected) abortFor('connect');
    }, this.connectTimeoutMs);
    const responseTimer = setTimeout(() => abortFor('response'), this.options.timeoutMs);
    const markConnected = (): void => {
      state.connected = true;
      clearTimeout(connectTimer);
    };
    let aborted = false;
    const onCallerAbort = (): void => {
      aborted = true;
      controller.abort();
      req?.destroy();
    };
    spec.signal?.addEventListener('abort', onCallerAbort, { once: true });

    const watch = (r: http.ClientRequest): void => {
      req = r;
      r.once('socket', (s: Socket) => {
        socket = s;
        bytesBefore = s.bytesWritten;
        const tls = s instanceof TLSSocket;
        if (r.reusedSocket || (!tls && !s.connecting)) markConnected();
        else s.once(tls ? 'secureConnect' : 'connect', markConnected);
      });
      r.once('finish', () => {
        flushed = true;
        markConnected();
      });
      r.once('response', markConnected);
    };
    const transport = {
      request(opts: https.RequestOptions, onResponse: (res: http.IncomingMessage) => void): http.ClientRequest {
        const r = opts.protocol === 'https:' ? https.request(opts, onResponse) : http.request(opts, onResponse);
        watch(r);
        return r;
      },
    };

    try {
      const res = await this.axios.request<Buffer>({
        url,
        method: spec.method,
        headers,
        data: body,
        signal: controller.signal,
        transport,
      });
      const retryAfter: unknown = res.headers['retry-after'];
      return {
        status: res.status,
        retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
        body: res.data,
      };
    } catch (e: unknown) {
      // Proven unwritten only when the socket's byte count never moved for this request.
      const after = socket?.bytesWritten;
      state.requestWritten =
        flushed || (socket !== undefined && (typeof after !== 'number' || typeof bytesBefore !== 'number' || after > bytesBefore));
      if (aborted) throw new UpstreamUnknownError(spec.operation, 'aborted');
      throw transportFailure(spec.operation, e, state);
    } finally {
      clearTimeout(connectTimer);
      clearTimeout(responseTimer);
      spec.signal?.removeEventListener('abort', onCallerAbort);
    }
  }
}
