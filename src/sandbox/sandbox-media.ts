/**
 * The sandbox's own images (under SANDBOX_UPLOADS_PREFIX): every `.png` path there is a small PNG
 * drawn from the path (the same path, the same bytes; another path, other bytes), so that its product
 * images and content images are real pictures and the relay's mirroring works with no configuration.
 *
 * A test switches a path to another answer (`set`): a status, another content type, a large body
 * streamed without end in sight, a hang, a redirect. Requests are counted by path, and a streamed
 * body the client stopped reading is counted in `stats.aborted`.
 */
import { deflateSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import type http from 'node:http';

export type SandboxMediaAnswer =
  | { kind: 'status'; status: number }
  /** The path's image bytes with this Content-Type. */
  | { kind: 'type'; contentType: string }
  /** `bytes` bytes of `image/png`, in 64 KiB chunks, with a Content-Length when `declareLength`. */
  | { kind: 'stream'; bytes: number; declareLength?: boolean }
  /** Never answers. */
  | { kind: 'hang' }
  | { kind: 'redirect'; location: string; status?: number };

export interface SandboxMediaStats {
  /** Requests answered or held, by path. */
  byPath: Map<string, number>;
  requests: number;
  /** Streamed bodies the client closed before their end. */
  aborted: number;
  /** Bytes of streamed bodies written. */
  streamedBytes: number;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

const SIZE = 32;

/** A 32×32 PNG drawn from `seed`: a colour of its own and some noise (a few KiB). */
export function sandboxPng(seed: string): Buffer {
  const digest = createHash('sha256').update(seed).digest();
  const raw = Buffer.alloc((SIZE * 3 + 1) * SIZE);
  let state = digest.readUInt32BE(0) || 1;
  for (let y = 0; y < SIZE; y++) {
    const row = y * (SIZE * 3 + 1);
    raw[row] = 0; // filter: none
    for (let x = 0; x < SIZE; x++) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      const noise = state & 0x3f;
      raw[row + 1 + x * 3] = (digest[4] + noise) & 0xff;
      raw[row + 2 + x * 3] = (digest[5] + x * 4) & 0xff;
      raw[row + 3 + x * 3] = (digest[6] + y * 4) & 0xff;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(SIZE, 0);
  header.writeUInt32BE(SIZE, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export class SandboxMedia {
  readonly stats: SandboxMediaStats = { byPath: new Map(), requests: 0, aborted: 0, streamedBytes: 0 };
  private readonly answers = new Map<string, SandboxMediaAnswer>();
  private readonly cache = new Map<string, Buffer>();

  /** The bytes the sandbox serves for an image path. */
  image(path: string): Buffer {
    let png = this.cache.get(path);
    if (!png) {
      png = sandboxPng(path);
      if (this.cache.size < 50_000) this.cache.set(path, png);
    }
    return png;
  }

  /** Answers `path` so from now on (until `clear`). */
  set(path: string, answer: SandboxMediaAnswer): void {
    this.answers.set(path, answer);
  }

  clear(): void {
    this.answers.clear();
  }

  resetStats(): void {
    this.stats.byPath.clear();
    this.stats.requests = 0;
    this.stats.aborted = 0;
    this.stats.streamedBytes = 0;
  }

  /** Requests of one path so far. */
  requestsOf(path: string): number {
    return this.stats.byPath.get(path) ?? 0;
  }

  serve(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): void {
    req.resume();
    this.stats.requests++;
    this.stats.byPath.set(pathname, (this.stats.byPath.get(pathname) ?? 0) + 1);
    const answer = this.answers.get(pathname);
    if (!answer) {
      if (!pathname.endsWith('.png')) return this.plain(res, 404, 'no such image');
      const png = this.image(pathname);
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length, 'cache-control': 'public, max-age=3600' });
      res.end(png);
      return;
    }
    switch (answer.kind) {
      case 'status':
        return this.plain(res, answer.status, `status ${answer.status}`);
      case 'type': {
        const png = this.image(pathname);
        res.writeHead(200, { 'content-type': answer.contentType, 'content-length': png.length });
        res.end(png);
        return;
      }
      case 'redirect':
        res.writeHead(answer.status ?? 302, { location: answer.location, 'content-length': 0 });
        res.end();
        return;
      case 'hang':
        return;
      case 'stream':
        return this.stream(res, answer.bytes, answer.declareLength ?? false);
    }
  }

  private plain(res: http.ServerResponse, status: number, text: string): void {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  /** Writes `total` bytes as the client reads them; a client that goes away stops it (`aborted`). */
  private stream(res: http.ServerResponse, total: number, declareLength: boolean): void {
    res.writeHead(200, { 'content-type': 'image/png', ...(declareLength ? { 'content-length': total } : {}) });
    const block = Buffer.alloc(64 * 1024, 0x42);
    let sent = 0;
    let closed = false;
    res.on('close', () => {
      closed = true;
      if (sent < total) this.stats.aborted++;
    });
    const pump = (): void => {
      while (!closed && sent < total) {
        const n = Math.min(block.length, total - sent);
        sent += n;
        this.stats.streamedBytes += n;
        if (!res.write(n === block.length ? block : block.subarray(0, n))) {
          res.once('drain', pump);
          return;
        }
      }
      if (!closed) res.end();
    };
    pump();
  }
}
