/**
 * A raw, signed HTTP client for the sandbox upstream, for tests: it shows exactly what a client sees
 * (status, headers, raw text) and rejects with the socket error (`err.code` ECONNRESET, ECONNREFUSED,
 * or ETIMEDOUT for its own timeout). One fresh connection per request (no keep-alive).
 */
import http from 'node:http';
import { signedHeaders } from '../signing/signing.js';

export interface SignedTarget {
  /** e.g. http://127.0.0.1:1234/api/v1/upstream */
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  headerPrefix: string;
  signatureTemplate: string;
}

export interface SignedRequestOptions {
  /** A JSON value (stringified) or a raw string body. */
  body?: unknown;
  query?: Record<string, string | number>;
  /** Default 5000. */
  timeoutMs?: number;
  /** Added to the signed timestamp (seconds), to simulate clock skew. */
  timestampOffsetS?: number;
  /** Send this API key instead (the signature is computed with it). */
  apiKey?: string;
  /** Sign with this secret instead. */
  secret?: string;
  /** Send this signature instead of the computed one (a function: made from the computed one). */
  signature?: string | ((computed: string) => string);
  /** Send no authentication headers at all. */
  unsigned?: boolean;
  /**
   * Headers set after signing, by exact name (e.g. `Service-Timestamp`): a value replaces the computed
   * one (the signature stays as computed), null leaves the header out.
   */
  headers?: Record<string, string | null>;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed body; undefined when it is not JSON. */
  json: unknown;
}

export class RequestTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
}

/** `path` is relative to the base URL (e.g. '/orders'). */
export function signedRequest(
  target: SignedTarget,
  method: string,
  path: string,
  options: SignedRequestOptions = {},
): Promise<RawResponse> {
  const base = new URL(target.baseUrl);
  const fullPath = `${base.pathname.replace(/\/$/, '')}${path}`;
  const qs = options.query
    ? new URLSearchParams(Object.entries(options.query).map(([k, v]) => [k, String(v)] as [string, string])).toString()
    : '';
  const body = options.body === undefined ? '' : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const apiKey = options.apiKey ?? target.apiKey;
  const auth = options.unsigned
    ? {}
    : signedHeaders(target.headerPrefix, options.secret ?? target.apiSecret, target.signatureTemplate, {
        apiKey,
        timestamp: Math.floor(Date.now() / 1000) + (options.timestampOffsetS ?? 0),
        method,
        path: fullPath,
        body,
      });
  const name = `${target.headerPrefix}-Signature`;
  if (typeof options.signature === 'function') auth[name] = options.signature(auth[name] ?? '');
  else if (options.signature !== undefined) auth[name] = options.signature;
  const headers: Record<string, string> = { ...auth };
  for (const [k, v] of Object.entries(options.headers ?? {})) {
    if (v === null) delete headers[k];
    else headers[k] = v;
  }
  if (body !== '') {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        protocol: base.protocol,
        hostname: base.hostname.replace(/^\[|\]$/g, ''),
        port: base.port,
        method,
        path: qs ? `${fullPath}?${qs}` : fullPath,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    const timer = setTimeout(
      () => req.destroy(new RequestTimeoutError(`no answer within ${options.timeoutMs ?? 5000} ms`)),
      options.timeoutMs ?? 5000,
    );
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body === '' ? undefined : body);
  });
}
