/**
 * HTTP plumbing shared by the sandbox's transport, order world and control API: the answer a handler
 * returns, the refusal with a contract code (`{ok:false, error_code, error_message}`), body reading
 * with a size limit, and the small parsers of ids and query integers.
 */
import type http from 'node:http';

/** Largest request body read (API and control API). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** What a handler answers; the transport writes it as JSON. */
export interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

/** A refusal with a contract code; becomes the `{ok:false, error_code, error_message}` envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class BodyTooLargeError extends Error {}

export function errorJson(code: string, message: string): string {
  return JSON.stringify({ ok: false, error_code: code, error_message: message });
}

export function okAnswer(body: object): Answer {
  return { status: 200, body: JSON.stringify(body) };
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function isPositiveInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

export function bad(message: string): ApiError {
  return new ApiError(400, 'bad_request', message);
}

export function parseId(raw: string | null, what: string): number {
  if (raw === null || !/^[1-9]\d{0,14}$/.test(raw)) throw bad(`${what} must be an integer >= 1`);
  return Number(raw);
}

export function parseQueryInt(raw: string | null, fallback: number, name: string): number {
  if (raw === null || raw === '') return fallback;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw bad(`${name} must be an integer >= 1`);
  return Number(raw);
}

/** The whole body; rejects with BodyTooLargeError past `limit` bytes (the rest is drained), or when the request is aborted. */
export function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
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
