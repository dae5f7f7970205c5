/**
 * Outgoing status callbacks of the sandbox upstream (spec §6, CONTRACT §4):
 * a snapshot of the order at each status change, POSTed to its callback_url, signed with the three
 * headers, retried after each delay of `retryDelaysMs` until the receiver answers HTTP 200 with
 * `{"ok":true}`. The first tries of one order's snapshots go out one after the other, in order.
 * A first try carries the order as it was at the change; each retry carries the order as it is at
 * the time of the retry (status, fulfillment, a fresh timestamp), as Dujiao-Next reads the order
 * again for every try (`current`).
 * Under option `callbacksPerChange` 2 (profile `dujiao-next`) the order world dispatches each status
 * change twice, as Dujiao-Next calls back for the order and for its child order with one body: every
 * copy is a callback of its own here (its own tries, log entries and fault handling).
 *
 * Callback faults (read at the moment of the status change):
 * `drop` sends nothing; `duplicate` sends `duplicateTimes` copies; `reorder` holds the snapshots of an
 * order and sends them newest-first once the order settles (delivered, completed, canceled, refunded,
 * partially_refunded), on its next change after the fault is switched off, or on `flushHeld()`; `delay`
 * waits `delayMs` first; `bad_signature` signs with a wrong secret.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { signedHeaders } from '../signing/signing.js';
import type { SandboxFaults } from './sandbox-faults.js';
import type { SandboxCallbackBody, SandboxOrderStatus, SandboxStats } from './sandbox.types.js';

export interface CallbackLogEntry {
  url: string;
  orderId: number;
  /** 1 for the first try, 2 for the first retry… */
  attempt: number;
  /** The raw JSON body sent. */
  body: string;
  /** The body, parsed. */
  json: SandboxCallbackBody;
  /** The headers sent (signature headers included). */
  headers: Record<string, string>;
  /** The path the signature was computed over. */
  signedPath: string;
  /** True when the `bad_signature` fault signed it with a wrong secret. */
  badSignature: boolean;
  /** The HTTP status answered; null when there was no answer (refused, timeout, reset). */
  status: number | null;
  responseBody: string | null;
  error: string | null;
  /** HTTP 200 with `{"ok":true}`. */
  ok: boolean;
  /** Clock ms when the try finished. */
  at: number;
}

export interface CallbackConfig {
  apiKey: string;
  secret: string;
  headerPrefix: string;
  template: string;
  /** The path a callback to this URL is signed over. */
  signingPath: (url: string) => string;
  retryDelaysMs: number[];
  timeoutMs: number;
  clock: () => number;
  /** The callback body of the order as it is now (null when it is gone): what a retry carries. */
  current?: (orderId: number) => SandboxCallbackBody | null;
}

interface Job {
  url: string;
  orderId: number;
  body: string;
  json: SandboxCallbackBody;
  badSignature: boolean;
  attempt: number;
  /** Jobs of an earlier generation (before clear()) are abandoned. */
  generation: number;
}

export const SETTLED_ORDER_STATUSES: ReadonlySet<SandboxOrderStatus> = new Set([
  'delivered',
  'completed',
  'canceled',
  'refunded',
  'partially_refunded',
]);
const MAX_RESPONSE_BYTES = 64 * 1024;

/** True for loopback, private, link-local, CGNAT and unspecified addresses and for `localhost`. */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const kind = isIP(host);
  if (kind === 4) return isPrivateV4(host);
  if (kind === 6) {
    if (host === '::1' || host === '::') return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host);
    if (mapped) return isPrivateV4(mapped[1]);
    const first = parseInt(host.split(':')[0] || '0', 16);
    return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80;
  }
  return false;
}

function isPrivateV4(host: string): boolean {
  const [a, b] = host.split('.').map(Number);
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127)
  );
}

/** Why a callback_url is refused, or null when it is acceptable. */
export function callbackUrlProblem(value: string, allowPrivate: boolean): string | null {
  if (value.length > 2048) return 'callback_url is too long';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'callback_url is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'callback_url must be http or https';
  if (!allowPrivate && isPrivateHost(url.hostname)) return 'callback_url points to a private or loopback address';
  return null;
}

export class CallbackDispatcher {
  readonly log: CallbackLogEntry[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly requests = new Set<http.ClientRequest>();
  private readonly held = new Map<number, Job[]>();
  private readonly chains = new Map<number, Promise<void>>();
  private closed = false;
  private generation = 0;
  /**
   * Callbacks go out as Dujiao-Next's one `http.Client` sends them: over kept-alive connections, at most
   * two of them kept idle per host (Go's default transport), the others closed after their answer; an
   * idle one is closed after 4 s, before Node's 5 s server default would close it under a request.
   */
  private readonly agents = {
    http: new http.Agent({ keepAlive: true, maxFreeSockets: 2, timeout: 4000 }),
    https: new https.Agent({ keepAlive: true, maxFreeSockets: 2, timeout: 4000 }),
  };

  constructor(
    private readonly config: CallbackConfig,
    private readonly faults: SandboxFaults,
    private readonly stats: SandboxStats,
    private readonly events: EventEmitter,
  ) {}

  /** A status change of an order that has a callback_url. */
  dispatch(url: string, json: SandboxCallbackBody): void {
    if (this.closed) return;
    const mode = this.faults.callbacks;
    const job = (): Job => ({
      url,
      orderId: json.order_id,
      body: JSON.stringify(json),
      json,
      badSignature: mode === 'bad_signature',
      attempt: 0,
      generation: this.generation,
    });
    switch (mode) {
      case 'drop':
        this.stats.callbacksDropped++;
        return;
      case 'duplicate':
        for (let i = 0; i < Math.max(1, this.faults.duplicateTimes); i++) this.enqueue(job());
        return;
      case 'reorder': {
        const list = this.held.get(json.order_id) ?? [];
        list.push(job());
        this.held.set(json.order_id, list);
        if (SETTLED_ORDER_STATUSES.has(json.status)) this.flushHeld(json.order_id);
        return;
      }
      case 'delay': {
        const j = job();
        this.later(this.faults.delayMs, () => this.enqueue(j));
        return;
      }
      default: {
        // Snapshots still held from an earlier `reorder` go out with this one, newest first.
        const held = this.held.get(json.order_id);
        if (held) {
          held.push(job());
          this.flushHeld(json.order_id);
        } else {
          this.enqueue(job());
        }
      }
    }
  }

  /** Sends the snapshots held by the `reorder` fault (of one order, or of all), newest first. */
  flushHeld(orderId?: number): void {
    const ids = orderId === undefined ? [...this.held.keys()] : [orderId];
    for (const id of ids) {
      const jobs = this.held.get(id);
      this.held.delete(id);
      if (jobs) for (const j of [...jobs].reverse()) this.enqueue(j);
    }
  }

  /** Number of snapshots held by the `reorder` fault. */
  heldCount(): number {
    let n = 0;
    for (const jobs of this.held.values()) n += jobs.length;
    return n;
  }

  /** Forgets everything pending and the log (full sandbox reset); keeps working afterwards. */
  clear(): void {
    this.generation++;
    this.cancelAll();
    this.log.length = 0;
  }

  stop(): void {
    this.closed = true;
    this.cancelAll();
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  private cancelAll(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const r of this.requests) r.destroy();
    this.requests.clear();
    this.held.clear();
    this.chains.clear();
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.closed) fn();
    }, ms);
    this.timers.add(t);
  }

  /** First tries of one order go out in order; retries run on their own timers. */
  private enqueue(job: Job): void {
    const previous = this.chains.get(job.orderId) ?? Promise.resolve();
    const next = previous.then(() => this.attempt(job));
    this.chains.set(job.orderId, next);
    void next.then(() => {
      if (this.chains.get(job.orderId) === next) this.chains.delete(job.orderId);
    });
  }

  private async attempt(job: Job): Promise<void> {
    if (this.closed || job.generation !== this.generation) return;
    if (job.attempt > 0) {
      // a retry: the order as it is now, not as it was at the change
      const now = this.config.current?.(job.orderId);
      if (now) {
        job.json = now;
        job.body = JSON.stringify(now);
      }
    }
    job.attempt++;
    const entry = await this.send(job);
    if (this.closed || job.generation !== this.generation) return;
    this.log.push(entry);
    this.stats.callbacksAttempted++;
    if (entry.ok) this.stats.callbacksSucceeded++;
    this.events.emit('callback', entry);
    if (entry.ok) return;
    const delay = this.config.retryDelaysMs[job.attempt - 1];
    if (delay !== undefined) this.later(delay, () => void this.attempt(job));
  }

  private send(job: Job): Promise<CallbackLogEntry> {
    const c = this.config;
    const signedPath = c.signingPath(job.url);
    const secret = job.badSignature ? `${c.secret}-not-the-secret` : c.secret;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(job.body)),
      ...signedHeaders(c.headerPrefix, secret, c.template, {
        apiKey: c.apiKey,
        timestamp: Math.floor(c.clock() / 1000),
        method: 'POST',
        path: signedPath,
        body: job.body,
      }),
    };
    return new Promise((resolve) => {
      let settled = false;
      const finish = (status: number | null, responseBody: string | null, error: string | null): void => {
        if (settled) return;
        settled = true;
        let ok = false;
        if (status === 200 && responseBody !== null) {
          try {
            ok = (JSON.parse(responseBody) as { ok?: unknown }).ok === true;
          } catch {
            ok = false;
          }
        }
        resolve({
          url: job.url,
          orderId: job.orderId,
          attempt: job.attempt,
          body: job.body,
          json: job.json,
          headers,
          signedPath,
          badSignature: job.badSignature,
          status,
          responseBody,
          error,
          ok,
          at: c.clock(),
        });
      };
      let url: URL;
      try {
        url = new URL(job.url);
      } catch {
        finish(null, null, 'invalid url');
        return;
      }
      const tls = url.protocol === 'https:';
      const request = (tls ? https : http).request(
        url,
        { method: 'POST', headers, agent: tls ? this.agents.https : this.agents.http, timeout: c.timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size <= MAX_RESPONSE_BYTES) chunks.push(chunk);
          });
          res.on('end', () => {
            this.requests.delete(request);
            finish(res.statusCode ?? null, Buffer.concat(chunks).toString('utf8'), null);
          });
          res.on('error', (err) => {
            this.requests.delete(request);
            finish(res.statusCode ?? null, null, err.message);
          });
        },
      );
      this.requests.add(request);
      request.on('timeout', () => request.destroy(new Error('callback timed out')));
      request.on('error', (err: NodeJS.ErrnoException) => {
        this.requests.delete(request);
        finish(null, null, err.code ?? err.message);
      });
      request.end(job.body);
    });
  }
}
