/**
 * A supplier as `/internal/suppliers` answers it (CONTRACT §10): never its secret, of its key only
 * the hint; its settings resolved (the profile's preset under what the operator set), on the wire
 * in the variables' units.
 */
import { redactUrl } from '../config/redact-url.js';
import { apiKeyHint } from './supplier-config.js';
import { formatRateLimit } from './supplier-input.js';
import type { SupplierStatus } from './supplier-status.source.js';
import type { SupplierConfig, SupplierSettings } from './supplier.types.js';

export interface SupplierSettingsResponse {
  header_prefix: string;
  signature_template: string;
  callback_signature_path: string | null;
  order_no_idempotent: boolean;
  timeout_ms: number;
  rate_limit: string;
  rate_limit_block_s: number;
  page_size: number;
  list_inactive: boolean;
  sync_mode: string;
}

export interface SupplierResponse {
  name: string;
  base_url: string;
  profile: string;
  api_key_hint: string;
  enabled: boolean;
  /** The `UPSTREAM_*` supplier: changed through the environment only. */
  managed_by_env: boolean;
  settings: SupplierSettingsResponse;
  callback_url: string | null;
  health: SupplierStatus['health'];
  wallet: SupplierStatus['wallet'];
  last_sync: SupplierStatus['last_sync'];
}

export function toSettingsResponse(s: SupplierSettings): SupplierSettingsResponse {
  return {
    header_prefix: s.headerPrefix,
    signature_template: s.signatureTemplate,
    callback_signature_path: s.callbackSignaturePath,
    order_no_idempotent: s.orderNoIdempotent,
    timeout_ms: s.timeoutMs,
    rate_limit: formatRateLimit(s.rateLimit),
    rate_limit_block_s: s.blockMs / 1000,
    page_size: s.pageSize,
    list_inactive: s.listInactive,
    sync_mode: s.syncMode,
  };
}

/**
 * The URL the supplier's callbacks go to: `CALLBACK_PUBLIC_URL` + `/<name>`; the `UPSTREAM_*`
 * supplier's orders carry the bare URL. Null without CALLBACK_PUBLIC_URL (orders are polled).
 */
export function supplierCallbackUrl(publicUrl: string | null, supplier: Pick<SupplierConfig, 'name' | 'managedByEnv'>): string | null {
  if (publicUrl === null) return null;
  return supplier.managedByEnv ? publicUrl : `${publicUrl.replace(/\/+$/, '')}/${supplier.name}`;
}

export function toSupplierResponse(config: SupplierConfig, status: SupplierStatus, callbackUrl: string | null): SupplierResponse {
  return {
    name: config.name,
    base_url: redactUrl(config.baseUrl),
    profile: config.profile,
    api_key_hint: apiKeyHint(config.apiKey),
    enabled: config.enabled,
    managed_by_env: config.managedByEnv,
    settings: toSettingsResponse(config.settings),
    callback_url: callbackUrl,
    health: status.health,
    wallet: status.wallet,
    last_sync: status.last_sync,
  };
}
