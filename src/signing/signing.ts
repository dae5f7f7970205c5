/**
 * Request signing of the upstream API (CONTRACT §4). Pure: no Nest, no I/O, no clock of its own.
 *
 * The canonical string is a template with placeholders, HMAC-SHA256'd with the secret, lower-case hex.
 * Used by the upstream client, the callback verifier, the sandbox upstream and the shop webhooks.
 */
import { createHash, createHmac, createSecretKey, hash, timingSafeEqual, type KeyObject } from 'node:crypto';

/** The published Dujiao-Next form, the default of every profile. */
export const DEFAULT_SIGNATURE_TEMPLATE = '{method}\n{path}\n{timestamp}\n{body_md5}';

export const SIGNATURE_PLACEHOLDERS = ['api_key', 'timestamp', 'method', 'path', 'body', 'body_md5', 'body_sha256'] as const;
export type SignaturePlaceholder = (typeof SIGNATURE_PLACEHOLDERS)[number];

const PLACEHOLDER_RE = /\{(api_key|timestamp|method|path|body|body_md5|body_sha256)\}/g;
const SIGNATURE_RE = /^[0-9a-fA-F]{64}$/;
const TIMESTAMP_RE = /^\d{1,12}$/;

export interface SigningInput {
  apiKey: string;
  /** Unix seconds, as sent in the timestamp header. */
  timestamp: string | number;
  method: string;
  /** Path only: with the `/api/v1/upstream` prefix, no host, no query string. */
  path: string;
  /** The exact raw body bytes; empty when there is none. */
  body?: Buffer | Uint8Array | string | null;
}

/**
 * Reads a template as written in an environment variable: the two characters `\n` mean a newline
 * (and `\\` a backslash). Unknown placeholders are left as literal text.
 */
export function parseSignatureTemplate(raw: string): string {
  return raw.replace(/\\(n|\\)/g, (_m, c: string) => (c === 'n' ? '\n' : '\\'));
}

/**
 * What a template leaves unsigned that a callback's verification relies on (CONTRACT §4 allows any
 * template; the upstream decides): without `{timestamp}` a captured signature can be replayed at any
 * time, without a body placeholder it vouches for any body. Empty when it signs both.
 */
export function templateWeaknesses(template: string): string[] {
  const used = new Set(templatePlaceholders(template));
  const out: string[] = [];
  if (!used.has('timestamp')) out.push('no {timestamp}: a captured signature can be replayed');
  if (!used.has('body') && !used.has('body_md5') && !used.has('body_sha256'))
    out.push('no {body}, {body_md5} or {body_sha256}: a signature vouches for any body');
  return out;
}

/** The placeholders a template uses, in order of appearance (duplicates kept once). */
export function templatePlaceholders(template: string): SignaturePlaceholder[] {
  const found = new Set<SignaturePlaceholder>();
  for (const m of template.matchAll(PLACEHOLDER_RE)) found.add(m[1] as SignaturePlaceholder);
  return [...found];
}

function toBuffer(body: SigningInput['body']): Buffer {
  if (body == null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * The canonical string as bytes. Substitution is a single pass, so a body that itself contains
 * `{timestamp}` is never expanded.
 */
export function canonicalBytes(template: string, input: SigningInput): Buffer {
  const { literals, names } = compiled(template);
  const body = toBuffer(input.body);
  const parts: Buffer[] = [Buffer.from(literals[0], 'utf8')];
  names.forEach((name, i) => {
    parts.push(name === 'body' ? body : Buffer.from(placeholderText(name, input, body), 'utf8'));
    parts.push(Buffer.from(literals[i + 1], 'utf8'));
  });
  return Buffer.concat(parts);
}

/** The canonical string as text (for display and tests; signing uses the bytes). */
export function canonicalString(template: string, input: SigningInput): string {
  return canonicalBytes(template, input).toString('utf8');
}

/** A template split once: its literal text between placeholders, and the placeholders in order. */
interface CompiledTemplate {
  /** `literals.length === names.length + 1`. */
  literals: string[];
  names: SignaturePlaceholder[];
}

/** Templates and secrets seen (a process signs with a few): split and imported once, not per request. */
const compiledTemplates = new Map<string, CompiledTemplate>();
const secretKeys = new Map<string, KeyObject>();
const CACHE_LIMIT = 64;

/** `map`'s value for `key`, made by `make` the first time (kept while the map holds fewer than CACHE_LIMIT). */
function cached<V>(map: Map<string, V>, key: string, make: (key: string) => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make(key);
    if (map.size < CACHE_LIMIT) map.set(key, value);
  }
  return value;
}

function compileTemplate(template: string): CompiledTemplate {
  const c: CompiledTemplate = { literals: [], names: [] };
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER_RE)) {
    c.literals.push(template.slice(last, m.index));
    c.names.push(m[1] as SignaturePlaceholder);
    last = m.index + m[0].length;
  }
  c.literals.push(template.slice(last));
  return c;
}

const compiled = (template: string): CompiledTemplate => cached(compiledTemplates, template, compileTemplate);
const secretKey = (secret: string): KeyObject => cached(secretKeys, secret, (s) => createSecretKey(Buffer.from(s, 'utf8')));

/** A placeholder's value as text, for every placeholder but `{body}` (whose bytes are signed as they are). */
function placeholderText(name: Exclude<SignaturePlaceholder, 'body'>, input: SigningInput, body: Buffer): string {
  switch (name) {
    case 'api_key':
      return input.apiKey;
    case 'timestamp':
      return String(input.timestamp);
    case 'method':
      return input.method.toUpperCase();
    case 'path':
      return input.path;
    case 'body_md5':
      return hash('md5', body, 'hex');
    case 'body_sha256':
      return hash('sha256', body, 'hex');
  }
}

/**
 * Lower-case hex HMAC-SHA256 of the canonical string keyed by the secret. The HMAC is fed the
 * canonical string's pieces in order (the same bytes as `canonicalBytes`, without building them):
 * the text between `{body}` placeholders as one UTF-8 string, the body as its raw bytes.
 */
export function sign(secret: string, template: string, input: SigningInput): string {
  const { literals, names } = compiled(template);
  const body = toBuffer(input.body);
  const hmac = createHmac('sha256', secretKey(secret));
  let text = literals[0];
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    if (name === 'body') {
      hmac.update(text, 'utf8');
      hmac.update(body);
      text = literals[i + 1];
    } else {
      text += placeholderText(name, input, body) + literals[i + 1];
    }
  }
  return hmac.update(text, 'utf8').digest('hex');
}

/** The three authentication headers: `<prefix>-Api-Key`, `<prefix>-Timestamp`, `<prefix>-Signature`. */
export interface SignatureHeaderNames {
  apiKey: string;
  timestamp: string;
  signature: string;
}

export function signatureHeaderNames(prefix: string): SignatureHeaderNames {
  return { apiKey: `${prefix}-Api-Key`, timestamp: `${prefix}-Timestamp`, signature: `${prefix}-Signature` };
}

/** Signs a request and returns the headers to send with it. */
export function signedHeaders(prefix: string, secret: string, template: string, input: SigningInput): Record<string, string> {
  const names = signatureHeaderNames(prefix);
  return {
    [names.apiKey]: input.apiKey,
    [names.timestamp]: String(input.timestamp),
    [names.signature]: sign(secret, template, input),
  };
}

export type VerifyFailure =
  'missing_header' | 'wrong_api_key' | 'malformed_timestamp' | 'timestamp_out_of_range' | 'malformed_signature' | 'signature_mismatch';

export type VerifyResult = { ok: true } | { ok: false; reason: VerifyFailure };

export interface VerifyInput {
  secret: string;
  template: string;
  /** The API key the request must carry (ours). */
  expectedApiKey: string;
  method: string;
  path: string;
  body: Buffer | Uint8Array | string | null | undefined;
  /** Header values as received; undefined when absent. */
  apiKey: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
  /** Current Unix time in seconds. */
  nowSeconds: number;
  /** Allowed skew in seconds, either way, inclusive. */
  toleranceSeconds: number;
}

/** Constant-time equality of two strings that never throws on a length difference. */
export function constantTimeEqual(a: string, b: string): boolean {
  const ab = createHash('sha256').update(a, 'utf8').digest();
  const bb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ab, bb) && a.length === b.length;
}

/**
 * Verifies a signed request: every header present, our API key, a well-formed timestamp within the
 * tolerance either way, a well-formed hex signature, then a constant-time comparison.
 */
export function verifySignature(v: VerifyInput): VerifyResult {
  if (v.apiKey === undefined || v.timestamp === undefined || v.signature === undefined) {
    return { ok: false, reason: 'missing_header' };
  }
  if (!constantTimeEqual(v.apiKey, v.expectedApiKey)) return { ok: false, reason: 'wrong_api_key' };
  if (!TIMESTAMP_RE.test(v.timestamp)) return { ok: false, reason: 'malformed_timestamp' };
  const skew = Math.abs(v.nowSeconds - Number(v.timestamp));
  if (skew > v.toleranceSeconds) return { ok: false, reason: 'timestamp_out_of_range' };
  if (!SIGNATURE_RE.test(v.signature)) return { ok: false, reason: 'malformed_signature' };
  const expected = Buffer.from(
    sign(v.secret, v.template, {
      apiKey: v.apiKey,
      timestamp: v.timestamp,
      method: v.method,
      path: v.path,
      body: v.body,
    }),
    'hex',
  );
  const given = Buffer.from(v.signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: 'signature_mismatch' };
  }
  return { ok: true };
}
