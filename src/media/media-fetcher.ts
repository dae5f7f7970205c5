/**
 * Downloads one image for mirroring (node:http/https, no request budget: image downloads are not API
 * requests). Every refusal of CONTRACT §5 is an answer, never an exception:
 * - a URL that is not http(s), at the start or after a redirect;
 * - an address that is private, loopback or link-local and not the supplier's own host and port: an IP
 *   literal is checked before connecting, a host name when it resolves (the connection goes to the
 *   address checked, so a name cannot resolve one way for the check and another for the request);
 * - a `Content-Type` that is not `image/*`;
 * - a body over `maxBytes`: refused at once on its `Content-Length`, else stopped as soon as the bytes
 *   received exceed it (never buffered past the limit);
 * - a 404 (another 4xx, a 5xx: `http_error`), a timeout over the whole download, an unreachable host.
 */
import { createHash } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { isPrivateAddress, isSupplierHost } from './media-address.js';
import type { ImageRefusal } from './product-media.js';

const MAX_REDIRECTS = 5;

export interface FetchOptions {
  /** The supplier's origin: its own host and port may be a private address. */
  supplier: URL;
  maxBytes: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

export type FetchedImage =
  | { ok: true; sha256: string; ext: string; contentType: string; data: Buffer }
  | {
      ok: false;
      reason: ImageRefusal;
      /** Worth trying again later (a timeout, an unreachable host, a 5xx). */ transient: boolean;
      detail: string;
    };

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/pjpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/svg+xml': 'svg',
  'image/bmp': 'bmp',
  'image/x-icon': 'ico',
  'image/vnd.microsoft.icon': 'ico',
  'image/tiff': 'tiff',
};

/** The file extension of an image content type (`image/png` → `png`). */
export function extensionOf(contentType: string): string {
  const known = EXTENSIONS[contentType];
  if (known) return known;
  const sub = contentType
    .slice('image/'.length)
    .replace(/[^a-z0-9]/g, '')
    .slice(0, 10);
  return sub || 'img';
}

/** `image/png; charset=…` → `image/png`; null when it is not an image type. */
export function imageType(header: string | undefined): string | null {
  const t = (header ?? '').split(';')[0].trim().toLowerCase();
  return /^image\/[a-z0-9.+-]+$/.test(t) ? t : null;
}

class Refused extends Error {
  constructor(
    readonly reason: ImageRefusal,
    readonly transient: boolean,
    detail: string,
  ) {
    super(detail);
  }
}

const PRIVATE = 'EMEDIAPRIVATE';

/** A lookup that fails for a private address (every address of the name must be public). */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const bad = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
      if (bad) {
        const e = Object.assign(new Error(`${hostname} resolves to the private address ${bad.address}`), { code: PRIVATE });
        return callback(e, '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

@Injectable()
export class MediaFetcher implements OnModuleDestroy {
  // Connections are kept between downloads (a socket is only reused for the host and port it was
  // opened to, whose address was checked when it connected).
  private readonly agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 4 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 4 }),
  };

  onModuleDestroy(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }

  async fetch(url: string, o: FetchOptions): Promise<FetchedImage> {
    const timeout = AbortSignal.timeout(o.timeoutMs);
    const signal = o.signal ? AbortSignal.any([o.signal, timeout]) : timeout;
    try {
      let current = new URL(url);
      for (let hop = 0; ; hop++) {
        const answer = await this.get(current, o, signal);
        if (answer.kind === 'image') return { ok: true, ...answer.image };
        if (hop >= MAX_REDIRECTS) throw new Refused('too_many_redirects', false, `more than ${MAX_REDIRECTS} redirects`);
        let next: URL;
        try {
          next = new URL(answer.location, current);
        } catch {
          throw new Refused('bad_url', false, `a redirect to a bad URL: ${answer.location}`);
        }
        current = next;
      }
    } catch (e) {
      if (e instanceof Refused) return { ok: false, reason: e.reason, transient: e.transient, detail: e.message };
      if (timeout.aborted) return { ok: false, reason: 'timeout', transient: true, detail: `no image within ${o.timeoutMs} ms` };
      if ((e as { code?: string }).code === PRIVATE)
        return { ok: false, reason: 'private_address', transient: false, detail: (e as Error).message };
      return { ok: false, reason: 'unreachable', transient: true, detail: (e as Error).message ?? String(e) };
    }
  }

  /** One request: an image, or a redirect to follow. */
  private get(
    url: URL,
    o: FetchOptions,
    signal: AbortSignal,
  ): Promise<
    { kind: 'image'; image: { sha256: string; ext: string; contentType: string; data: Buffer } } | { kind: 'redirect'; location: string }
  > {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return Promise.reject(new Refused('not_http', false, `not an http(s) URL: ${url.protocol}`));
    const allowPrivate = isSupplierHost(url, o.supplier);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!allowPrivate && isIP(host) !== 0 && isPrivateAddress(host)) {
      return Promise.reject(new Refused('private_address', false, `${host} is a private, loopback or link-local address`));
    }
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = client.request(
        url,
        {
          method: 'GET',
          signal,
          agent: this.agents[url.protocol as 'http:' | 'https:'],
          lookup: guardedLookup(allowPrivate),
          headers: { accept: 'image/*', 'user-agent': 'upstream-relay media' },
        },
        (res) => {
          const status = res.statusCode ?? 0;
          const fail = (e: Refused): void => {
            res.destroy();
            reject(e);
          };
          if (status >= 300 && status < 400 && res.headers.location) {
            res.resume();
            return resolve({ kind: 'redirect', location: res.headers.location });
          }
          if (status === 404) return fail(new Refused('not_found', false, 'HTTP 404'));
          if (status < 200 || status >= 300) return fail(new Refused('http_error', status >= 500 || status === 429, `HTTP ${status}`));
          const type = imageType(res.headers['content-type']);
          if (type === null) return fail(new Refused('not_an_image', false, `Content-Type ${res.headers['content-type'] ?? '(none)'}`));
          const declared = Number(res.headers['content-length']);
          if (Number.isFinite(declared) && declared > o.maxBytes)
            return fail(new Refused('too_large', false, `Content-Length ${declared} over ${o.maxBytes} bytes`));
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > o.maxBytes) return fail(new Refused('too_large', false, `over ${o.maxBytes} bytes`));
            chunks.push(chunk);
          });
          res.on('error', reject);
          res.on('end', () => {
            if (size > o.maxBytes) return;
            const data = Buffer.concat(chunks, size);
            resolve({
              kind: 'image',
              image: { sha256: createHash('sha256').update(data).digest('hex'), ext: extensionOf(type), contentType: type, data },
            });
          });
          res.on('close', () => {
            if (!res.complete) reject(new Error('the answer was cut short'));
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
  }
}
