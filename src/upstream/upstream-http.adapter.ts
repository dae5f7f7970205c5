/**
 * The HTTP adapter of the upstream port (`http.request` / `https.request` over keep-alive agents).
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
 *
 * Every HTTP status is an answer (redirects are not followed). The body is read to its last byte and
 * decoded per `Content-Encoding` (gzip, deflate, br); a response cut after its headers, one that does
 * not decode, or one larger than `maxResponseBytes` is a transport failure after connect: unknown.
 */
import { hash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { performance } from 'node:perf_hooks';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { signedHeaders } from '../signing/signing.js';
import { UpstreamClient, type PageRecognizer, type RecognizedPage } from './upstream.client.js';
import { UpstreamUnknownError, isUpstreamError, type UpstreamError } from './upstream.errors.js';
import { classifyHttpAnswer, transportFailure, type HttpAnswer, type TransportState } from './upstream-http.classification.js';
import {
  isUpstreamCanceledOrder,
  splitCategories,
  isUpstreamCreatedOrder,
  isUpstreamOrder,
  isUpstreamPing,
  isUpstreamProduct,
  isUpstreamProductPageEnvelope,
  splitProductPage,
} from './upstream.shapes.js';
import type {
  ProductPageQuery,
  UpstreamCanceledOrder,
  UpstreamCategoryList,
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
}

const EMPTY_BODY = Buffer.alloc(0);

/** Headers of every request; the signature headers and `Content-Length` are added per request. */
const COMMON_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'application/json',
  Accept: 'application/json',
  'Accept-Encoding': 'gzip, deflate, br',
  'User-Agent': 'upstream-relay',
};

const ONCE = { once: true } as const;

// As axios did: a compressed body that stops short decodes to what arrived (the HTTP framing already
// proved the body complete); bytes that are not the format still fail.
const ZLIB_OPTIONS: zlib.ZlibOptions = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
const BROTLI_OPTIONS: zlib.BrotliOptions = {
  flush: zlib.constants.BROTLI_OPERATION_FLUSH,
  finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
};

/**
 * The decoder of a `Content-Encoding`, chosen once the body's first bytes are known; `undefined` for
 * an encoding we do not decode (the bytes are kept as received, as axios did).
 */
function decoderFor(encoding: string, first: Buffer): Transform | undefined {
  switch (encoding.toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createUnzip(ZLIB_OPTIONS); // gzip, or a zlib stream mislabelled
    case 'deflate':
      // RFC 9110 means a zlib stream; some servers send raw deflate
      return isZlibHeader(first) ? zlib.createInflate(ZLIB_OPTIONS) : zlib.createInflateRaw(ZLIB_OPTIONS);
    case 'br':
      return zlib.createBrotliDecompress(BROTLI_OPTIONS);
    default:
      return undefined;
  }
}

/**
 * Whether a body starts with a zlib header (RFC 1950): method 8 (deflate) with a window of at most
 * 32 KiB, and the check bits that make the first two bytes a multiple of 31. Not only `0x78` (the
 * 32 KiB window): a stream made with a smaller window starts `0x68`, `0x58`, … `0x08`.
 */
function isZlibHeader(first: Buffer): boolean {
  const cmf = first[0];
  if ((cmf & 0x0f) !== 8 || cmf >> 4 > 7) return false;
  return first.length < 2 || ((cmf << 8) | first[1]) % 31 === 0;
}

/** A transport error with a code, for classification (`transportErrorCode`). */
function codedError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** What one exchange needs of the client. */
interface ExchangeLimits {
  connectTimeoutMs: number;
  timeoutMs: number;
  maxResponseBytes: number;
}

/**
 * One request and its answer: the request's socket watch, the two timers, the caller's signal and the
 * body read. Ends exactly once, by `resolve` (a complete HTTP answer) or `reject` (a classified transport
 * failure); either way both timers are cleared and the abort listener removed. On failure the request,
 * the response and the decoder are destroyed, so the socket is closed rather than returned to the agent
 * with an answer half read; on success the body was read to its end and the socket is back in the pool.
 */
class Exchange {
  private readonly state: TransportState = { connected: false, requestWritten: false };
  private readonly connectTimer: NodeJS.Timeout;
  private readonly responseTimer: NodeJS.Timeout;
  private req: http.ClientRequest | undefined;
  private socket: Socket | undefined;
  /** The socket's byte count when this request got it. */
  private bytesBefore: number | undefined;
  private flushed = false;
  private aborted = false;
  private ended = false;

  private res: http.IncomingMessage | undefined;
  /** The `Content-Encoding` until the first chunk of the body chose the decoder. */
  private encoding: string | undefined;
  private decoder: Transform | undefined;
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly spec: RequestSpec,
    private readonly limits: ExchangeLimits,
    private readonly resolve: (answer: HttpAnswer) => void,
    private readonly reject: (error: UpstreamError) => void,
  ) {
    this.connectTimer = setTimeout(this.onConnectTimeout, limits.connectTimeoutMs);
    this.responseTimer = setTimeout(this.onResponseTimeout, limits.timeoutMs);
    spec.signal?.addEventListener('abort', this.onCallerAbort, ONCE);
  }

  /** Sends the request built by `create` (which must pass `onResponse` as the response callback). */
  start(create: (onResponse: (res: http.IncomingMessage) => void) => http.ClientRequest): void {
    let req: http.ClientRequest;
    try {
      req = create(this.onResponse);
    } catch (e: unknown) {
      this.fail(e); // e.g. a header value Node refuses: nothing was sent
      return;
    }
    this.req = req;
    req.once('socket', this.onSocket);
    req.once('finish', this.onFlushed);
    req.on('error', this.fail);
    // A `101 Switching Protocols` hands the socket to an 'upgrade' listener (without one, Node destroys
    // it and the request only closes): not an answer of this API, and the request was sent.
    req.once('upgrade', this.onUpgrade);
    req.once('close', this.onRequestClose);
    req.end(this.spec.body);
  }

  private readonly onUpgrade = (_res: http.IncomingMessage, socket: Socket): void => {
    socket.destroy();
    this.fail(codedError('the upstream switched protocols', 'unexpected_upgrade'));
  };

  /** The request closed with neither an answer nor an error (its socket was taken away). */
  private readonly onRequestClose = (): void => {
    if (this.res === undefined) this.fail(codedError('the connection closed without an answer', 'ECONNRESET'));
  };

  private readonly onSocket = (s: Socket): void => {
    // 'socket' comes before this request's bytes are flushed to it
    this.socket = s;
    this.bytesBefore = s.bytesWritten;
    const tls = s instanceof TLSSocket;
    // (a socket whose connect failed at once is already destroyed here: not connected)
    if (this.req?.reusedSocket || (!tls && !s.connecting && !s.destroyed)) this.markConnected();
    else s.once(tls ? 'secureConnect' : 'connect', this.markConnected);
  };

  private readonly markConnected = (): void => {
    this.state.connected = true;
    clearTimeout(this.connectTimer);
  };

  private readonly onFlushed = (): void => {
    this.flushed = true;
    this.markConnected();
  };

  private readonly onConnectTimeout = (): void => {
    if (!this.state.connected) this.timeOut('connect');
  };

  private readonly onResponseTimeout = (): void => this.timeOut('response');

  private timeOut(kind: 'connect' | 'response'): void {
    this.state.timedOut = kind;
    this.fail(new Error(`${kind} timeout`));
  }

  private readonly onCallerAbort = (): void => {
    this.aborted = true;
    this.fail(new Error('aborted'));
  };

  private readonly onResponse = (res: http.IncomingMessage): void => {
    this.res = res;
    if (this.ended) {
      res.destroy();
      return;
    }
    this.markConnected();
    this.encoding = res.headers['content-encoding'];
    res.on('data', this.onRawData);
    res.once('end', this.onRawEnd);
    // A response cut after its headers (reset, or closed mid-body) errors with ECONNRESET ('aborted')
    // or the socket's own error; 'close' without a complete message is the backstop.
    res.on('error', this.fail);
    res.once('close', this.onRawClose);
  };

  private readonly onRawData = (chunk: Buffer): void => {
    if (this.encoding !== undefined) {
      this.decoder = decoderFor(this.encoding, chunk);
      this.encoding = undefined;
      this.decoder?.on('data', this.onBodyData).once('end', this.onBodyEnd).on('error', this.fail);
    }
    if (this.decoder) this.decoder.write(chunk);
    else this.onBodyData(chunk);
  };

  private readonly onRawEnd = (): void => {
    // an empty body never chose a decoder: nothing to decode
    if (this.decoder) this.decoder.end();
    else this.onBodyEnd();
  };

  private readonly onRawClose = (): void => {
    if (!this.res?.complete) this.fail(codedError('response cut short', 'ECONNRESET'));
  };

  /** A chunk of the body as decoded. */
  private readonly onBodyData = (chunk: Buffer): void => {
    if (this.ended) return;
    this.size += chunk.length;
    if (this.size > this.limits.maxResponseBytes) {
      this.fail(codedError(`answer larger than ${this.limits.maxResponseBytes} bytes`, 'response_too_large'));
      return;
    }
    this.chunks.push(chunk);
  };

  private readonly onBodyEnd = (): void => {
    const res = this.res;
    if (res === undefined || !this.settle()) return;
    const { chunks } = this;
    this.resolve({
      status: res.statusCode ?? 0,
      retryAfter: res.headers['retry-after'],
      body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, this.size),
    });
  };

  /** Fails the exchange with a transport failure (or `aborted`), once. */
  private readonly fail = (err: unknown): void => {
    if (!this.settle()) return;
    // Proven unwritten only when the socket's byte count never moved for this request.
    const after = this.socket?.bytesWritten;
    this.state.requestWritten =
      this.flushed ||
      (this.socket !== undefined && (typeof after !== 'number' || typeof this.bytesBefore !== 'number' || after > this.bytesBefore));
    // The socket is closed, not pooled. (Once the raw answer has ended, the socket may already be back in
    // the agent's pool while the decoder runs: Node then marks the request destroyed and detaches the
    // response from it, so these calls cannot touch a socket another request uses.)
    this.req?.destroy();
    this.res?.destroy();
    this.decoder?.destroy();
    const operation = this.spec.operation;
    this.reject(this.aborted ? new UpstreamUnknownError(operation, 'aborted') : transportFailure(operation, err, this.state));
  };

  /** Marks the exchange ended and releases its timers and abort listener; false when it already was. */
  private settle(): boolean {
    if (this.ended) return false;
    this.ended = true;
    clearTimeout(this.connectTimer);
    clearTimeout(this.responseTimer);
    this.spec.signal?.removeEventListener('abort', this.onCallerAbort);
    return true;
  }
}

/** RFC 3339 in UTC, truncated to the second (an earlier instant only widens an `updated_after` filter). */
export function toRfc3339Seconds(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function positiveId(id: number, what: string): string {
  if (!Number.isSafeInteger(id) || id < 1) throw new RangeError(`${what} must be an integer ≥ 1, got ${String(id)}`);
  return String(id);
}

/** `GET /products` for a page of the listing. */
function productsRequest(query: ProductPageQuery, signal: AbortSignal | undefined): RequestSpec {
  const params = new URLSearchParams({ page: String(query.page), page_size: String(query.pageSize) });
  if (query.updatedAfter) params.set('updated_after', toRfc3339Seconds(query.updatedAfter));
  if (query.includeInactive) params.set('include_inactive', 'true');
  return { operation: 'listProducts', method: 'GET', path: '/products', query: params, signal };
}

export class UpstreamHttpClient extends UpstreamClient {
  /** The base URL's path, without a trailing slash (e.g. `/api/v1/upstream`). */
  private readonly basePath: string;
  private readonly connectTimeoutMs: number;
  private readonly clock: () => number;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  /** `http.request` or `https.request`, with the agent of the base URL's protocol. */
  private readonly request: typeof http.request;
  private readonly agent: http.Agent;
  private readonly hostname: string;
  private readonly port: number | undefined;
  private readonly limits: ExchangeLimits;

  constructor(private readonly options: UpstreamHttpOptions) {
    super();
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`upstream baseUrl must be http(s), got ${url.protocol}`);
    }
    // (a Node timer longer than 2^31 − 1 ms fires after 1 ms)
    if (!(options.timeoutMs > 0) || !(options.timeoutMs <= 2_147_483_647)) {
      throw new Error(`upstream timeoutMs must be a positive number of milliseconds up to 2147483647, got ${String(options.timeoutMs)}`);
    }
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.connectTimeoutMs = Math.max(1, options.connectTimeoutMs ?? Math.min(options.timeoutMs, 3000));
    this.clock = options.clock ?? Date.now;
    const agentOptions = { keepAlive: true, timeout: options.keepAliveIdleMs ?? 4000 };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    const tls = url.protocol === 'https:';
    this.request = tls ? https.request : http.request;
    this.agent = tls ? this.httpsAgent : this.httpAgent;
    // An IPv6 literal comes bracketed in a URL, not in a hostname
    this.hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.port = url.port === '' ? undefined : Number(url.port);
    this.limits = {
      connectTimeoutMs: this.connectTimeoutMs,
      timeoutMs: options.timeoutMs,
      maxResponseBytes: options.maxResponseBytes ?? 32 * 1024 * 1024,
    };
  }

  override async ping(signal?: AbortSignal): Promise<UpstreamPing> {
    return this.call({ operation: 'ping', method: 'POST', path: '/ping', body: EMPTY_BODY, signal }, isUpstreamPing);
  }

  override async listCategories(signal?: AbortSignal): Promise<UpstreamCategoryList> {
    // The envelope must be right; a category whose shape is wrong is left out and reported in `skipped`.
    const answer = await this.call(
      { operation: 'listCategories', method: 'GET', path: '/categories', signal },
      (v): v is { ok: true; categories: unknown[] } => Array.isArray((v as { categories?: unknown }).categories),
    );
    return splitCategories(answer.categories);
  }

  override async listProducts(query: ProductPageQuery, signal?: AbortSignal): Promise<UpstreamProductPage> {
    // The envelope must be right; a product whose shape is wrong is left out of `items` and reported
    // in `skipped`.
    return splitProductPage(await this.call(productsRequest(query, signal), isUpstreamProductPageEnvelope));
  }

  override async listProductsRecognizing<K>(
    query: ProductPageQuery,
    recognize: PageRecognizer<K>,
    signal?: AbortSignal,
  ): Promise<RecognizedPage<K>> {
    const spec = productsRequest(query, signal);
    return this.exchange(spec, (answer): RecognizedPage<K> => {
      const digest = hash('sha256', answer.body ?? EMPTY_BODY, 'base64url');
      if (answer.status === 200) {
        // bytes the caller has seen answered before: what they hold is known, nothing to parse
        const known = recognize(digest);
        if (known !== undefined) return { kind: 'recognized', known };
      }
      return { kind: 'parsed', page: splitProductPage(this.parse(spec, answer, isUpstreamProductPageEnvelope)), digest };
    });
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
    return this.call({ operation: 'getOrder', method: 'GET', path: `/orders/${positiveId(id, 'order id')}`, signal }, isUpstreamOrder);
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

  /**
   * Nest lifecycle hook, the last of a shutdown: after every module's destroy hook (which wait for
   * their own work in flight) and after the HTTP server answered its requests in flight, so that an
   * order create or cancel already sent keeps its socket and runs to its answer. Destroying the
   * agents earlier (onModuleDestroy) cut such a create off, and a paid order became `submit_unknown`.
   */
  onApplicationShutdown(): void {
    this.close();
  }

  private call<T>(spec: RequestSpec, isExpected: (v: unknown) => v is T): Promise<T> {
    return this.exchange(spec, (answer) => this.parse(spec, answer, isExpected));
  }

  /** The answer's body when it is a success of the expected shape; else the classified error. */
  private parse<T>(spec: RequestSpec, answer: HttpAnswer, isExpected: (v: unknown) => v is T): T {
    const c = classifyHttpAnswer(spec.operation, answer, this.clock());
    if (!c.ok) throw c.error;
    if (!isExpected(c.body)) throw new UpstreamUnknownError(spec.operation, 'unexpected_shape', answer.status);
    return c.body;
  }

  /** Sends the request and reads its answer with `read`; reports the call's outcome once, either way. */
  private async exchange<R>(spec: RequestSpec, read: (answer: HttpAnswer) => R): Promise<R> {
    const started = performance.now();
    let httpStatus: number | undefined;
    try {
      const answer = await this.send(spec);
      httpStatus = answer.status;
      const result = read(answer);
      this.report(spec.operation, 'ok', started, httpStatus);
      return result;
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

  /**
   * Sends one signed request; resolves with any complete HTTP answer (every status, no redirect
   * followed), rejects with a transport failure.
   */
  private send(spec: RequestSpec): Promise<HttpAnswer> {
    if (spec.signal?.aborted) return Promise.reject(new UpstreamUnknownError(spec.operation, 'aborted'));
    const signedPath = `${this.basePath}${spec.path}`;
    const query = spec.query?.toString() ?? '';
    const options: http.RequestOptions = {
      // our own agent, never a proxy: "connected" must mean connected to the upstream
      agent: this.agent,
      hostname: this.hostname,
      port: this.port,
      method: spec.method,
      path: query === '' ? signedPath : `${signedPath}?${query}`,
      headers: this.headersFor(spec, signedPath),
    };
    return new Promise<HttpAnswer>((resolve, reject) => {
      new Exchange(spec, this.limits, resolve, reject).start((onResponse) => this.request(options, onResponse));
    });
  }

  /** The common headers, the signature over the path (no query string) and the exact body, and its length. */
  private headersFor(spec: RequestSpec, signedPath: string): http.OutgoingHttpHeaders {
    const headers: http.OutgoingHttpHeaders = {
      ...COMMON_HEADERS,
      ...signedHeaders(this.options.headerPrefix, this.options.apiSecret, this.options.signatureTemplate, {
        apiKey: this.options.apiKey,
        timestamp: Math.floor(this.clock() / 1000),
        method: spec.method,
        path: signedPath,
        body: spec.body ?? EMPTY_BODY,
      }),
    };
    // A POST always has a body, maybe empty (`Content-Length: 0`, as axios sent); a GET has none.
    if (spec.body !== undefined) headers['Content-Length'] = spec.body.length;
    return headers;
  }
}
