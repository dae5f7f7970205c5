/**
 * Where a supplier's configuration comes from, pure: the env supplier from the validated
 * configuration (the `UPSTREAM_*`, `CALLBACK_*` and `SYNC_*` variables), a stored supplier's settings
 * from its profile's preset under what the operator set, and the hint of a key that is shown instead
 * of the key.
 */
import { PROFILES, type AppConfigShape, type UpstreamProfile } from '../config/app-config.js';
import type { BudgetSettings } from '../budget/upstream-budget.service.js';
import type { SupplierConfig, SupplierSettings } from './supplier.types.js';

/** The env supplier (CONTRACT §10): `config.upstream.baseUrl` must be known (the sandbox started). */
export function envSupplier(config: Pick<AppConfigShape, 'upstream' | 'callbacks' | 'sync' | 'budget'>): SupplierConfig {
  const { upstream, callbacks, sync, budget } = config;
  if (!upstream.baseUrl) throw new Error('upstream base URL is not known (sandbox not started?)');
  return {
    name: upstream.name,
    baseUrl: upstream.baseUrl,
    apiKey: upstream.apiKey,
    apiSecret: upstream.apiSecret,
    callbackSecret: callbacks.secret,
    profile: upstream.profile,
    settings: {
      headerPrefix: upstream.headerPrefix,
      signatureTemplate: upstream.signatureTemplate,
      callbackSignaturePath: callbacks.signaturePath,
      orderNoIdempotent: upstream.orderNoIdempotent,
      timeoutMs: upstream.timeoutMs,
      rateLimit: budget.rateLimit,
      blockMs: budget.blockMs,
      pageSize: sync.pageSize,
      listInactive: sync.listInactive,
      syncMode: sync.mode,
    },
    enabled: true,
    managedByEnv: true,
  };
}

/**
 * A stored supplier's settings: its profile's preset (CONTRACT §4), then the service-wide defaults of
 * what no profile decides, then what the operator set (`given`, any subset).
 */
export function supplierSettings(
  profile: UpstreamProfile,
  given: Partial<SupplierSettings>,
  defaults: Pick<SupplierSettings, 'timeoutMs' | 'blockMs' | 'syncMode'>,
): SupplierSettings {
  const preset = PROFILES[profile];
  return {
    headerPrefix: preset.headerPrefix,
    signatureTemplate: preset.signatureTemplate,
    callbackSignaturePath: preset.callbackSignaturePath,
    orderNoIdempotent: preset.orderNoIdempotent,
    rateLimit: preset.rateLimit,
    pageSize: preset.pageSize,
    listInactive: preset.listsInactive,
    ...defaults,
    ...definedOnly(given),
  };
}

function definedOnly<T extends object>(value: Partial<T>): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** What is shown of an API key: its last 4 characters (CONTRACT §10 `api_key_hint`). */
export function apiKeyHint(apiKey: string): string {
  return apiKey.length <= 4 ? apiKey : apiKey.slice(-4);
}

/** The request budget of a supplier's key: its limit and block, the service-wide shares. */
export function budgetSettings(s: SupplierConfig, shares: Pick<AppConfigShape['budget'], 'syncShare' | 'reconcileShare'>): BudgetSettings {
  return {
    supplier: s.name,
    rateLimit: s.settings.rateLimit,
    blockMs: s.settings.blockMs,
    syncShare: shares.syncShare,
    reconcileShare: shares.reconcileShare,
    apiKey: s.apiKey,
    baseUrl: s.baseUrl,
  };
}
