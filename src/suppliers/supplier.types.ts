/**
 * A supplier (CONTRACT §10): one upstream account the relay buys from. The `UPSTREAM_*` variables
 * define one (`UPSTREAM_NAME`, default `main`); more are kept in the `suppliers` table. Pure types.
 */
import type { RateLimitSetting, SyncMode, UpstreamProfile } from '../config/app-config.js';

/** `[a-z][a-z0-9-]{0,31}`: fixed once created; part of the callback URL and of every metric label. */
export const SUPPLIER_NAME_PATTERN = /^[a-z][a-z0-9-]{0,31}$/;

/** The per-upstream settings of §3 and §4, one set per supplier (the env supplier's from the variables). */
export interface SupplierSettings {
  /** UPSTREAM_HEADER_PREFIX */
  headerPrefix: string;
  /** UPSTREAM_SIGNATURE_TEMPLATE */
  signatureTemplate: string;
  /** CALLBACK_SIGNATURE_PATH: the path its callbacks are signed over; null: the callback URL's own path. */
  callbackSignaturePath: string | null;
  /** UPSTREAM_ORDER_NO_IDEMPOTENT */
  orderNoIdempotent: boolean;
  /** UPSTREAM_TIMEOUT_MS */
  timeoutMs: number;
  /** UPSTREAM_RATE_LIMIT; null: off. */
  rateLimit: RateLimitSetting | null;
  /** UPSTREAM_RATE_LIMIT_BLOCK_S, in milliseconds. */
  blockMs: number;
  /** SYNC_PAGE_SIZE */
  pageSize: number;
  /** UPSTREAM_LIST_INACTIVE */
  listInactive: boolean;
  /** SYNC_MODE */
  syncMode: SyncMode;
}

/** A supplier as the service uses it: credentials in clear (in memory only), its settings resolved. */
export interface SupplierConfig {
  name: string;
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  /**
   * The secret its callbacks are verified with: the API secret, except for the env supplier, whose
   * CALLBACK_SECRET may differ.
   */
  callbackSecret: string;
  profile: UpstreamProfile;
  settings: SupplierSettings;
  enabled: boolean;
  /** The `UPSTREAM_*` supplier: written at every start, never edited through the API. */
  managedByEnv: boolean;
}
