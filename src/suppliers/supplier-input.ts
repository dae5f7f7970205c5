/**
 * The bodies of `POST /internal/suppliers` and `PATCH /internal/suppliers/{name}` (CONTRACT §10),
 * read and checked, pure: every field at fault is named (`fields`, as 400 `bad_request` carries it),
 * with the ranges the `UPSTREAM_*`, `CALLBACK_*` and `SYNC_*` variables have (the same Reader reads
 * them). Also what a change does to a supplier: its settings after a patch, and whether the change
 * needs a ping (it changes how the upstream is reached or signed for).
 *
 *   readSupplierCreate({ name: 'acme', base_url, api_key, api_secret, settings: { rate_limit: '30/60s' } })
 *     → { ok: true, value: { name: 'acme', …, settings: { rateLimit: { requests: 30, windowMs: 60000 } } } }
 */
import { UPSTREAM_PATH_PREFIX, type RateLimitSetting, type UpstreamProfile } from '../config/app-config.js';
import { Reader } from '../config/env-reader.js';
import { SIGNATURE_PLACEHOLDERS, templatePlaceholders } from '../signing/signing.js';
import { isUpstreamError, UpstreamDefinitiveError } from '../upstream/upstream.errors.js';
import { SUPPLIER_NAME_PATTERN, type SupplierConfig, type SupplierSettings } from './supplier.types.js';

export const SUPPLIER_PROFILES: readonly UpstreamProfile[] = ['spec', 'dujiao-next'];

/** The wire name of each setting (snake_case, in `settings`). */
export const SETTING_FIELDS = {
  header_prefix: 'headerPrefix',
  signature_template: 'signatureTemplate',
  callback_signature_path: 'callbackSignaturePath',
  order_no_idempotent: 'orderNoIdempotent',
  timeout_ms: 'timeoutMs',
  rate_limit: 'rateLimit',
  rate_limit_block_s: 'blockMs',
  page_size: 'pageSize',
  list_inactive: 'listInactive',
  sync_mode: 'syncMode',
} as const satisfies Record<string, keyof SupplierSettings>;
type WireSetting = keyof typeof SETTING_FIELDS;

/** A new supplier, read from the body of `POST /internal/suppliers`. */
export interface SupplierCreateInput {
  name: string;
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  profile: UpstreamProfile;
  enabled: boolean;
  /** Only what the operator set. */
  settings: Partial<SupplierSettings>;
}

/**
 * A change, read from the body of `PATCH /internal/suppliers/{name}`: the fields given. A setting
 * given as null goes back to its default (the profile's preset, or the service's): it is in `unset`.
 */
export interface SupplierPatchInput {
  baseUrl?: string;
  apiKey?: string;
  apiSecret?: string;
  profile?: UpstreamProfile;
  enabled?: boolean;
  settings?: SettingsPatch;
}

export interface SettingsPatch {
  set: Partial<SupplierSettings>;
  unset: Array<keyof SupplierSettings>;
}

export type InputResult<T> = { ok: true; value: T } | { ok: false; fields: Record<string, string[]> };

const TOP_FIELDS = ['name', 'base_url', 'api_key', 'api_secret', 'profile', 'enabled', 'settings'] as const;
const HEADER_PREFIX = /^[A-Za-z0-9-]{1,64}$/;
/** Printable ASCII without white space: what a header value carries as it is. */
const CREDENTIAL = /^[\x21-\x7e]{1,512}$/;

class Fields {
  readonly out: Record<string, string[]> = {};
  add(field: string, message: string): void {
    (this.out[field] ??= []).push(message);
  }
  get empty(): boolean {
    return Object.keys(this.out).length === 0;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function readSupplierCreate(body: unknown): InputResult<SupplierCreateInput> {
  const f = new Fields();
  if (!isObject(body)) return { ok: false, fields: { body: ['must be a JSON object'] } };
  unknownFields(body, TOP_FIELDS, '', f);
  const name = body.name;
  if (name === undefined) f.add('name', 'is required');
  else if (typeof name !== 'string' || !SUPPLIER_NAME_PATTERN.test(name))
    f.add('name', 'must match [a-z][a-z0-9-]{0,31} (a lower-case letter, then up to 31 letters, digits or dashes)');
  for (const k of ['base_url', 'api_key', 'api_secret'] as const) if (body[k] === undefined) f.add(k, 'is required');
  const baseUrl = body.base_url === undefined ? undefined : readBaseUrl(body.base_url, f);
  const apiKey = body.api_key === undefined ? undefined : readCredential('api_key', body.api_key, f);
  const apiSecret = body.api_secret === undefined ? undefined : readCredential('api_secret', body.api_secret, f);
  const profile = body.profile === undefined ? 'spec' : readProfile(body.profile, f);
  const enabled = body.enabled === undefined ? true : readBool('enabled', body.enabled, f);
  const settings = body.settings === undefined ? {} : readSettings(body.settings, false, f).set;
  if (!f.empty) return { ok: false, fields: f.out };
  return {
    ok: true,
    value: {
      name: name as string,
      baseUrl: baseUrl!,
      apiKey: apiKey!,
      apiSecret: apiSecret!,
      profile: profile!,
      enabled: enabled!,
      settings,
    },
  };
}

/** `name` may be given only as the supplier's own (it is fixed once created). */
export function readSupplierPatch(name: string, body: unknown): InputResult<SupplierPatchInput> {
  const f = new Fields();
  if (!isObject(body)) return { ok: false, fields: { body: ['must be a JSON object'] } };
  unknownFields(body, TOP_FIELDS, '', f);
  if (body.name !== undefined && body.name !== name) f.add('name', 'is fixed once created');
  const value: SupplierPatchInput = {};
  if (body.base_url !== undefined) value.baseUrl = readBaseUrl(body.base_url, f);
  if (body.api_key !== undefined) value.apiKey = readCredential('api_key', body.api_key, f);
  if (body.api_secret !== undefined) value.apiSecret = readCredential('api_secret', body.api_secret, f);
  if (body.profile !== undefined) value.profile = readProfile(body.profile, f);
  if (body.enabled !== undefined) value.enabled = readBool('enabled', body.enabled, f);
  if (body.settings !== undefined) value.settings = readSettings(body.settings, true, f);
  if (!f.empty) return { ok: false, fields: f.out };
  return { ok: true, value };
}

/** What the operator set after a patch: the stored settings less those unset, then those set. */
export function patchedSettings(stored: Partial<SupplierSettings>, patch: SettingsPatch | undefined): Partial<SupplierSettings> {
  const out: Partial<SupplierSettings> = { ...stored };
  for (const k of patch?.unset ?? []) delete out[k];
  return { ...out, ...patch?.set };
}

/** Whether a change reaches or signs for the upstream differently (then it is pinged before it is saved). */
export function needsPing(before: SupplierConfig, after: SupplierConfig): boolean {
  return (
    before.baseUrl !== after.baseUrl ||
    before.apiKey !== after.apiKey ||
    before.apiSecret !== after.apiSecret ||
    before.profile !== after.profile ||
    before.settings.headerPrefix !== after.settings.headerPrefix ||
    before.settings.signatureTemplate !== after.settings.signatureTemplate
  );
}

/**
 * What a failed ping of a candidate's credentials says (CONTRACT §10): `auth_failed` when the upstream
 * refused them (401/403), else `unavailable` (not reached, or no usable answer), with a reason that
 * names no credential.
 */
export function pingRefusal(e: unknown): { verdict: 'auth_failed' | 'unavailable'; reason: string } {
  if (e instanceof UpstreamDefinitiveError) {
    const verdict = e.httpStatus === 401 || e.httpStatus === 403 ? 'auth_failed' : 'unavailable';
    return { verdict, reason: `${e.errorCode} (HTTP ${e.httpStatus})` };
  }
  if (isUpstreamError(e)) return { verdict: 'unavailable', reason: (e as { reason?: string }).reason ?? e.name };
  return { verdict: 'unavailable', reason: 'no usable answer' };
}

/** A rate limit as UPSTREAM_RATE_LIMIT writes it: `60/60s`, `20/1500ms`, or `off`. */
export function formatRateLimit(r: RateLimitSetting | null): string {
  if (r === null) return 'off';
  return r.windowMs % 1000 === 0 ? `${r.requests}/${r.windowMs / 1000}s` : `${r.requests}/${r.windowMs}ms`;
}

function unknownFields(body: Record<string, unknown>, known: readonly string[], prefix: string, f: Fields): void {
  for (const k of Object.keys(body)) if (!known.includes(k)) f.add(`${prefix}${k}`, 'is not a field of a supplier');
}

function readBaseUrl(v: unknown, f: Fields): string | undefined {
  const problem = 'must be an http(s) URL including the path prefix ' + UPSTREAM_PATH_PREFIX;
  if (typeof v !== 'string') return void f.add('base_url', problem);
  let u: URL;
  try {
    u = new URL(v.trim());
  } catch {
    return void f.add('base_url', problem);
  }
  if (!['http:', 'https:'].includes(u.protocol) || !u.pathname.replace(/\/+$/, '').endsWith(UPSTREAM_PATH_PREFIX))
    return void f.add('base_url', problem);
  if (u.username || u.password) return void f.add('base_url', 'must not carry credentials (give api_key and api_secret)');
  if (u.search || u.hash) return void f.add('base_url', 'must not carry a query or a fragment');
  return v.trim().replace(/\/+$/, '');
}

function readCredential(field: string, v: unknown, f: Fields): string | undefined {
  if (typeof v !== 'string' || !CREDENTIAL.test(v)) return void f.add(field, 'must be 1 to 512 printable characters without white space');
  return v;
}

function readProfile(v: unknown, f: Fields): UpstreamProfile | undefined {
  if (typeof v !== 'string' || !(SUPPLIER_PROFILES as readonly string[]).includes(v))
    return void f.add('profile', `must be one of ${SUPPLIER_PROFILES.join(', ')}`);
  return v as UpstreamProfile;
}

function readBool(field: string, v: unknown, f: Fields): boolean | undefined {
  if (typeof v !== 'boolean') return void f.add(field, 'must be true or false');
  return v;
}

/** `nullable` (a patch): a setting given as null is unset; else null is only the callback path's own value. */
function readSettings(v: unknown, nullable: boolean, f: Fields): SettingsPatch {
  const set: Record<string, unknown> = {};
  const out: SettingsPatch = { set: set as Partial<SupplierSettings>, unset: [] };
  if (!isObject(v)) {
    f.add('settings', 'must be an object');
    return out;
  }
  unknownFields(v, Object.keys(SETTING_FIELDS), 'settings.', f);
  for (const [wire, key] of Object.entries(SETTING_FIELDS) as Array<[WireSetting, keyof SupplierSettings]>) {
    const given = v[wire];
    if (given === undefined) continue;
    const field = `settings.${wire}`;
    if (given === null && nullable) {
      out.unset.push(key);
      continue;
    }
    if (given === null && wire === 'callback_signature_path') {
      set[key] = null;
      continue;
    }
    const read = readSetting(wire, given);
    if (typeof read === 'string') f.add(field, read);
    else set[key] = read.value;
  }
  return out;
}

/** One setting's value, or the message of its refusal. */
function readSetting(wire: WireSetting, v: unknown): { value: unknown } | string {
  switch (wire) {
    case 'header_prefix':
      return typeof v === 'string' && HEADER_PREFIX.test(v) ? { value: v } : 'must be 1 to 64 letters, digits and dashes';
    case 'signature_template':
      return readTemplate(v);
    case 'callback_signature_path':
      return typeof v === 'string' && v.startsWith('/') && !/\s/.test(v) ? { value: v } : 'must be a path starting with /, or null';
    case 'order_no_idempotent':
    case 'list_inactive':
      return typeof v === 'boolean' ? { value: v } : 'must be true or false';
    case 'timeout_ms':
      return readNumber(wire, v, (r) => r.int(wire, 0, 50, 600_000));
    case 'page_size':
      return readNumber(wire, v, (r) => r.int(wire, 0, 1, 1000));
    case 'rate_limit_block_s':
      return readNumber(wire, v, (r) =>
        Math.max(
          1,
          Math.round(1000 * r.number(wire, 0, { min: 0, max: 86_400, what: 'a number of seconds greater than 0, at most 86400' })),
        ),
      );
    case 'rate_limit': {
      if (typeof v !== 'string') return 'must be <requests>/<window> (60/60s) or off';
      const r = new Reader({ [wire]: v });
      const value = r.rateLimit(wire, null);
      return r.problems.length ? stripName(wire, r.problems[0]) : { value };
    }
    case 'sync_mode':
      return v === 'auto' || v === 'full' || v === 'incremental' ? { value: v } : 'must be one of auto, full, incremental';
  }
}

/** A number read with the variable's own range (the Reader's messages, without the variable's name). */
function readNumber(wire: string, v: unknown, read: (r: Reader) => number): { value: number } | string {
  if (typeof v !== 'number' || !Number.isFinite(v)) return 'must be a number';
  const r = new Reader({ [wire]: String(v) });
  const value = read(r);
  return r.problems.length ? stripName(wire, r.problems[0]) : { value };
}

const stripName = (wire: string, problem: string): string => problem.slice(wire.length + 2);

function readTemplate(v: unknown): { value: string } | string {
  if (typeof v !== 'string' || v.length === 0 || v.length > 1000) return 'must be a template of 1 to 1000 characters';
  const unknown = [...v.matchAll(/\{([A-Za-z0-9_]+)\}/g)]
    .map((m) => m[1])
    .filter((n) => !(SIGNATURE_PLACEHOLDERS as readonly string[]).includes(n));
  if (unknown.length) return `has unknown placeholders ${unknown.map((n) => `{${n}}`).join(', ')}`;
  if (templatePlaceholders(v).length === 0) return 'must contain at least one placeholder ({method}, {path}, {timestamp}, {body_md5}…)';
  return { value: v };
}
