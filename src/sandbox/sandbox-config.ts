/**
 * The sandbox's settings after defaults: `resolveSandboxConfig(options)` applies the profile presets
 * (`spec` / `dujiao-next`, see SandboxOptions in sandbox.types.ts) and checks what can be wrong.
 */
import { DEFAULT_SIGNATURE_TEMPLATE } from '../signing/signing.js';
import { formatMoney, parseMoney } from './sandbox-money.js';
import { validRateLimit, type RateLimitRule } from './sandbox-rate-limit.js';
import {
  SANDBOX_ORDER_STATUSES,
  type SandboxLowBalance,
  type SandboxMemberLevel,
  type SandboxOptions,
  type SandboxOrderStatus,
  type SandboxProfile,
  type SandboxTimetable,
} from './sandbox.types.js';

export const SANDBOX_API_PREFIX = '/api/v1/upstream';
export const SANDBOX_CONTROL_PREFIX = '/__sandbox';
/** The fixed path Dujiao-Next signs its callbacks over. */
export const DUJIAO_NEXT_CALLBACK_PATH = '/api/v1/upstream/callback';
export const DEFAULT_SANDBOX_TIMETABLE: Readonly<SandboxTimetable> = { paidMs: 50, fulfillingMs: 100, deliveredMs: 200, completedMs: null };
export const DEFAULT_CALLBACK_RETRY_DELAYS_MS: readonly number[] = [30_000, 60_000, 120_000, 300_000];
/** Dujiao-Next's limiter of its upstream API (router.go `upstreamAPIRule`): 60 requests per 60 s, then a 30 s block. */
export const DUJIAO_NEXT_RATE_LIMIT: Readonly<RateLimitRule> = Object.freeze({ requests: 60, windowMs: 60_000, blockMs: 30_000 });

const DEFAULT_MEMBER_LEVEL: SandboxMemberLevel = { id: 2, name: { 'zh-CN': '黄金会员', en: 'Gold' }, slug: 'gold', icon: '' };
/** Cancelable states by profile: the spec does not show them; Dujiao-Next's CancelOrder takes only pending_payment. */
const SPEC_CANCELABLE: readonly SandboxOrderStatus[] = ['pending_payment', 'paid'];
const DUJIAO_NEXT_CANCELABLE: readonly SandboxOrderStatus[] = ['pending_payment'];
const LOW_BALANCE_MODES: readonly SandboxLowBalance[] = ['payment_failed', 'insufficient_balance'];

/** The sandbox's settings after defaults. */
export interface SandboxConfig {
  profile: SandboxProfile;
  headerPrefix: string;
  signatureTemplate: string;
  apiKey: string;
  apiSecret: string;
  callbackSecret: string;
  /** null: by profile (spec → the callback_url's path). */
  callbackSignaturePath: string | null;
  timestampToleranceS: number;
  pageSizeCap: number;
  dedupeDownstreamOrderNo: boolean;
  callbacksPerChange: 1 | 2;
  refundRecords: boolean;
  refundCallbacks: boolean;
  orderDetailShowsDownstreamNo: boolean;
  paysInCreate: boolean;
  skipsFulfilling: boolean;
  cancelableStatuses: readonly SandboxOrderStatus[];
  lowBalance: SandboxLowBalance;
  servesInactiveSkus: boolean;
  listsInactiveProducts: boolean;
  servesWithdrawnProducts: boolean;
  manualFormCheck: 'dujiao-next' | 'spec';
  /** The limiter the sandbox starts with (and returns to on reset()); null: off. */
  rateLimit: Readonly<RateLimitRule> | null;
  maxQuantity: number;
  catalogProducts: number;
  catalogSeed: number;
  walletBalance: string;
  currency: string;
  callbackRetryDelaysMs: number[];
  callbackTimeoutMs: number;
  allowPrivateCallbackUrls: boolean;
  siteName: string;
  userId: number;
  memberLevel: SandboxMemberLevel | null;
}

/** What a client needs to talk to the sandbox (see sandbox-request.ts). */
export interface SandboxCredentials {
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  headerPrefix: string;
  signatureTemplate: string;
}

function validLowBalance(v: SandboxLowBalance): SandboxLowBalance {
  if (!LOW_BALANCE_MODES.includes(v)) throw new RangeError(`lowBalance must be one of ${LOW_BALANCE_MODES.join(', ')}`);
  return v;
}

function validCallbacksPerChange(n: number): 1 | 2 {
  if (n !== 1 && n !== 2) throw new RangeError(`callbacksPerChange must be 1 or 2, not ${String(n)}`);
  return n;
}

function validStatuses(list: readonly SandboxOrderStatus[]): SandboxOrderStatus[] {
  for (const s of list) if (!SANDBOX_ORDER_STATUSES.includes(s)) throw new RangeError(`unknown order status ${String(s)}`);
  return [...list];
}

export function resolveSandboxConfig(options: SandboxOptions): Readonly<SandboxConfig> {
  const profile = options.profile ?? 'spec';
  const dujiao = profile === 'dujiao-next';
  const apiSecret = options.apiSecret ?? 'sandbox-api-secret';
  return Object.freeze({
    profile,
    headerPrefix: options.headerPrefix ?? (dujiao ? 'Dujiao-Next' : 'Service'),
    signatureTemplate: options.signatureTemplate ?? DEFAULT_SIGNATURE_TEMPLATE,
    apiKey: options.apiKey ?? 'sandbox-api-key',
    apiSecret,
    callbackSecret: options.callbackSecret ?? apiSecret,
    callbackSignaturePath: options.callbackSignaturePath ?? (dujiao ? DUJIAO_NEXT_CALLBACK_PATH : null),
    timestampToleranceS: options.timestampToleranceS ?? 60,
    pageSizeCap: options.pageSizeCap ?? 50,
    dedupeDownstreamOrderNo: options.dedupeDownstreamOrderNo ?? true,
    callbacksPerChange: validCallbacksPerChange(options.callbacksPerChange ?? (dujiao ? 2 : 1)),
    refundRecords: options.refundRecords ?? dujiao,
    refundCallbacks: options.refundCallbacks ?? !dujiao,
    orderDetailShowsDownstreamNo: options.orderDetailShowsDownstreamNo ?? false,
    paysInCreate: options.paysInCreate ?? dujiao,
    skipsFulfilling: options.skipsFulfilling ?? false,
    cancelableStatuses: Object.freeze(validStatuses(options.cancelableStatuses ?? (dujiao ? DUJIAO_NEXT_CANCELABLE : SPEC_CANCELABLE))),
    lowBalance: validLowBalance(options.lowBalance ?? (dujiao ? 'payment_failed' : 'insufficient_balance')),
    servesInactiveSkus: options.servesInactiveSkus ?? !dujiao,
    listsInactiveProducts: options.listsInactiveProducts ?? dujiao,
    servesWithdrawnProducts: options.servesWithdrawnProducts ?? dujiao,
    manualFormCheck: options.manualFormCheck ?? (dujiao ? 'dujiao-next' : 'spec'),
    rateLimit: options.rateLimit ? Object.freeze(validRateLimit(options.rateLimit)) : null,
    maxQuantity: options.maxQuantity ?? 10_000,
    catalogProducts: options.catalog?.products ?? 40,
    catalogSeed: options.catalog?.seed ?? 1,
    walletBalance: formatMoney(parseMoney(options.wallet?.balance ?? '1000000.00')),
    currency: options.wallet?.currency ?? 'CNY',
    callbackRetryDelaysMs: [...(options.callbackRetryDelaysMs ?? DEFAULT_CALLBACK_RETRY_DELAYS_MS)],
    callbackTimeoutMs: options.callbackTimeoutMs ?? 5000,
    allowPrivateCallbackUrls: options.allowPrivateCallbackUrls ?? false,
    siteName: options.siteName ?? 'Sandbox Upstream',
    userId: options.userId ?? 1,
    memberLevel: options.memberLevel === undefined ? DEFAULT_MEMBER_LEVEL : options.memberLevel,
  });
}
