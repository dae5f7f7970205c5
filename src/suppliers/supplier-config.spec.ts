import { loadConfig, PROFILES } from '../config/app-config.js';
import { apiKeyHint, budgetSettings, envSupplier, supplierSettings } from './supplier-config.js';

describe('supplier configuration', () => {
  const config = loadConfig({
    UPSTREAM_BASE_URL: 'http://up.example/api/v1/upstream',
    UPSTREAM_API_KEY: 'key-1234',
    UPSTREAM_API_SECRET: 'secret',
    UPSTREAM_PROFILE: 'dujiao-next',
    UPSTREAM_NAME: 'acme',
    UPSTREAM_RATE_LIMIT: '30/60s',
    SYNC_PAGE_SIZE: '20',
  });

  it('the env supplier is what the UPSTREAM_* variables say, managed by the environment', () => {
    const env = envSupplier(config);
    expect(env).toMatchObject({ name: 'acme', baseUrl: 'http://up.example/api/v1/upstream', apiKey: 'key-1234', managedByEnv: true });
    expect(env.settings.rateLimit).toEqual({ requests: 30, windowMs: 60_000 });
    expect(env.settings.pageSize).toBe(20);
    expect(env.settings.headerPrefix).toBe('Dujiao-Next');
    expect(budgetSettings(env, config.budget)).toMatchObject({ supplier: 'acme', rateLimit: { requests: 30, windowMs: 60_000 } });
  });

  it('a stored supplier takes its profile preset under what the operator set', () => {
    const defaults = { timeoutMs: 5000, blockMs: 30_000, syncMode: 'auto' as const };
    const preset = supplierSettings('dujiao-next', {}, defaults);
    expect(preset.rateLimit).toEqual(PROFILES['dujiao-next'].rateLimit);
    expect(preset.listInactive).toBe(true);
    const set = supplierSettings('dujiao-next', { pageSize: 10, rateLimit: null, timeoutMs: undefined }, defaults);
    expect(set.pageSize).toBe(10);
    expect(set.rateLimit).toBeNull();
    expect(set.timeoutMs).toBe(5000);
  });

  it('shows only the last four characters of a key', () => {
    expect(apiKeyHint('abcdefgh1234')).toBe('1234');
  });
});
