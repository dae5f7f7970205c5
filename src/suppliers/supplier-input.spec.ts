import { PROFILES } from '../config/app-config.js';
import { UpstreamDefinitiveError, UpstreamRetryableError, UpstreamUnknownError } from '../upstream/upstream.errors.js';
import { formatRateLimit, needsPing, pingRefusal, patchedSettings, readSupplierCreate, readSupplierPatch } from './supplier-input.js';
import { supplierSettings } from './supplier-config.js';
import type { SupplierConfig } from './supplier.types.js';

const BASE = 'http://up.example/api/v1/upstream';
const valid = { name: 'acme', base_url: `${BASE}/`, api_key: 'key-1234', api_secret: 's3cret' };

describe('supplier input', () => {
  it('reads a new supplier: defaults, trailing slash dropped, settings in their own units', () => {
    const r = readSupplierCreate({
      ...valid,
      profile: 'dujiao-next',
      settings: { rate_limit: '30/60s', rate_limit_block_s: 2.5, page_size: 20, sync_mode: 'full', callback_signature_path: null },
    });
    expect(r).toEqual({
      ok: true,
      value: {
        name: 'acme',
        baseUrl: BASE,
        apiKey: 'key-1234',
        apiSecret: 's3cret',
        profile: 'dujiao-next',
        enabled: true,
        settings: {
          rateLimit: { requests: 30, windowMs: 60_000 },
          blockMs: 2500,
          pageSize: 20,
          syncMode: 'full',
          callbackSignaturePath: null,
        },
      },
    });
    expect(readSupplierCreate(valid)).toMatchObject({ ok: true, value: { profile: 'spec', enabled: true, settings: {} } });
    expect(readSupplierCreate({ ...valid, settings: { rate_limit: 'off' } })).toMatchObject({
      ok: true,
      value: { settings: { rateLimit: null } },
    });
  });

  it('names every field at fault, with the variables’ ranges', () => {
    const r = readSupplierCreate({
      name: 'Acme!',
      base_url: 'ftp://up.example/api/v1/upstream',
      api_key: 'has space',
      profile: 'other',
      enabled: 'yes',
      color: 'red',
      settings: {
        timeout_ms: 10,
        page_size: 1001,
        rate_limit: '60 a minute',
        rate_limit_block_s: 0,
        header_prefix: 'X_Y',
        signature_template: '{method}\n{nonce}',
        sync_mode: 'sometimes',
        list_inactive: 'true',
        extra: 1,
      },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(Object.keys(r.fields).sort()).toEqual(
      [
        'api_key',
        'api_secret',
        'base_url',
        'color',
        'enabled',
        'name',
        'profile',
        'settings.extra',
        'settings.header_prefix',
        'settings.list_inactive',
        'settings.page_size',
        'settings.rate_limit',
        'settings.rate_limit_block_s',
        'settings.signature_template',
        'settings.sync_mode',
        'settings.timeout_ms',
      ].sort(),
    );
    expect(r.fields['settings.timeout_ms']).toEqual(['must be between 50 and 600000, got 10']);
    expect(r.fields['settings.page_size']).toEqual(['must be between 1 and 1000, got 1001']);
    expect(r.fields['api_secret']).toEqual(['is required']);
  });

  it('refuses a base URL without the path prefix, with credentials, or that is not a URL', () => {
    for (const base_url of ['http://up.example/', 'http://u:p@up.example/api/v1/upstream', 'not a url', 42]) {
      expect(readSupplierCreate({ ...valid, base_url })).toMatchObject({ ok: false, fields: { base_url: [expect.any(String)] } });
    }
    expect(readSupplierCreate([])).toEqual({ ok: false, fields: { body: ['must be a JSON object'] } });
  });

  it('reads a patch: only the fields given, a null setting unset, the name fixed', () => {
    expect(readSupplierPatch('acme', { enabled: false })).toEqual({ ok: true, value: { enabled: false } });
    expect(readSupplierPatch('acme', { name: 'acme', settings: { page_size: null, rate_limit: 'off' } })).toEqual({
      ok: true,
      value: { settings: { set: { rateLimit: null }, unset: ['pageSize'] } },
    });
    expect(readSupplierPatch('acme', { name: 'other' })).toEqual({ ok: false, fields: { name: ['is fixed once created'] } });
    expect(patchedSettings({ pageSize: 10, timeoutMs: 900 }, { set: { rateLimit: null }, unset: ['pageSize'] })).toEqual({
      timeoutMs: 900,
      rateLimit: null,
    });
  });

  it('pings a change that reaches or signs differently, not a change of enabled or page size', () => {
    const defaults = { timeoutMs: 5000, blockMs: 30_000, syncMode: 'auto' as const };
    const config: SupplierConfig = {
      name: 'acme',
      baseUrl: BASE,
      apiKey: 'k',
      apiSecret: 's',
      callbackSecret: 's',
      profile: 'spec',
      settings: supplierSettings('spec', {}, defaults),
      enabled: true,
      managedByEnv: false,
    };
    expect(needsPing(config, { ...config, enabled: false, settings: { ...config.settings, pageSize: 5 } })).toBe(false);
    expect(needsPing(config, { ...config, apiSecret: 't' })).toBe(true);
    expect(needsPing(config, { ...config, baseUrl: 'http://other/api/v1/upstream' })).toBe(true);
    expect(needsPing(config, { ...config, settings: { ...config.settings, headerPrefix: 'X' } })).toBe(true);
  });

  it('tells refused credentials from an upstream not reached', () => {
    expect(pingRefusal(new UpstreamDefinitiveError('ping', 'invalid_signature', 401, 'bad'))).toEqual({
      verdict: 'auth_failed',
      reason: 'invalid_signature (HTTP 401)',
    });
    expect(pingRefusal(new UpstreamDefinitiveError('ping', 'forbidden', 403, 'no')).verdict).toBe('auth_failed');
    expect(pingRefusal(new UpstreamDefinitiveError('ping', 'not_found', 404, 'no')).verdict).toBe('unavailable');
    expect(pingRefusal(new UpstreamRetryableError('ping', 'ECONNREFUSED'))).toEqual({ verdict: 'unavailable', reason: 'ECONNREFUSED' });
    expect(pingRefusal(new UpstreamUnknownError('ping', 'http_502')).verdict).toBe('unavailable');
    expect(pingRefusal(new Error('x')).verdict).toBe('unavailable');
  });

  it('writes a rate limit as the variable does', () => {
    expect(formatRateLimit(PROFILES['dujiao-next'].rateLimit)).toBe('60/60s');
    expect(formatRateLimit({ requests: 20, windowMs: 1500 })).toBe('20/1500ms');
    expect(formatRateLimit(null)).toBe('off');
  });
});
