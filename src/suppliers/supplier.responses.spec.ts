import { supplierSettings } from './supplier-config.js';
import { supplierCallbackUrl, toSupplierResponse } from './supplier.responses.js';
import type { SupplierConfig } from './supplier.types.js';

describe('supplier answer', () => {
  const config: SupplierConfig = {
    name: 'acme',
    baseUrl: 'https://acme.example/api/v1/upstream',
    apiKey: 'acme-key-f3a9',
    apiSecret: 'acme-secret',
    callbackSecret: 'acme-secret',
    profile: 'dujiao-next',
    settings: supplierSettings('dujiao-next', { pageSize: 20 }, { timeoutMs: 10_000, blockMs: 1500, syncMode: 'auto' }),
    enabled: true,
    managedByEnv: false,
  };
  const status = {
    health: { upstream: null, budget: null, checked_at: null },
    wallet: { balance: null, currency: null, checked_at: null },
    last_sync: null,
  };

  it('carries the key hint and never the secret, the settings in the variables’ units', () => {
    const r = toSupplierResponse(config, status, null);
    expect(r).toMatchObject({ name: 'acme', api_key_hint: 'f3a9', profile: 'dujiao-next', enabled: true, managed_by_env: false });
    expect(r.settings).toMatchObject({ page_size: 20, rate_limit: '60/60s', rate_limit_block_s: 1.5, header_prefix: 'Dujiao-Next' });
    expect(JSON.stringify(r)).not.toContain('acme-secret');
    expect(JSON.stringify(r)).not.toContain('acme-key-f3a9');
  });

  it('has its own callback URL; the env supplier keeps the bare one; none without CALLBACK_PUBLIC_URL', () => {
    expect(supplierCallbackUrl('https://relay.example/callbacks/upstream/', config)).toBe('https://relay.example/callbacks/upstream/acme');
    expect(supplierCallbackUrl('https://relay.example/callbacks/upstream', { name: 'main', managedByEnv: true })).toBe(
      'https://relay.example/callbacks/upstream',
    );
    expect(supplierCallbackUrl(null, config)).toBeNull();
  });
});
