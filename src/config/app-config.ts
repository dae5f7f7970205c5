/**
 * The one typed configuration of the service (CONTRACT §3), read once from the environment and
 * validated at start. Pure: `loadConfig(env, options)` returns the config or throws a ConfigError that
 * names every variable at fault. Nothing else in the code reads `process.env`.
 */
import { randomBytes } from 'node:crypto';
import { validateCronExpression } from 'cron';
import { DEFAULT_SIGNATURE_TEMPLATE, SIGNATURE_PLACEHOLDERS, parseSignatureTemplate, templatePlaceholders } from '../signing/signing.js';
import { PricingError, validateMarkupInput } from '../catalog/pricing.js';
import { parseReconcileAfter } from '../reconciliation/reconcile-plan.js';
import { Reader, type Env } from './env-reader.js';
import { redactUrl } from './redact-url.js';

/** The variable behind each field of a markup (for the configuration's messages). */
const PRICING_VARIABLES: Record<string, string> = {
  markup_percent: 'PRICE_MARKUP_PERCENT',
  markup_fixed: 'PRICE_MARKUP_FIXED',
  rounding: 'PRICE_ROUNDING',
};

export type UpstreamProfile = 'spec' | 'dujiao-next';
export type SyncMode = 'auto' | 'full' | 'incremental';
/** How far a verified callback is trusted (CALLBACK_TRUST). */
export type CallbackTrust = 'verified' | 'confirm';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
/** `json`: one JSON object a line (production); `pretty`: one plain line a record, for a person at a terminal. */
export type LogFormat = 'json' | 'pretty';

export const UPSTREAM_PATH_PREFIX = '/api/v1/upstream';
export const SANDBOX_API_KEY = 'sandbox-api-key';
export const SANDBOX_API_SECRET = 'sandbox-api-secret';

export interface ProfilePreset {
  headerPrefix: string;
  signatureTemplate: string;
  /** null: the path of CALLBACK_PUBLIC_URL. */
  callbackSignaturePath: string | null;
  pageSize: number;
  orderNoIdempotent: boolean;
  /** The upstream's request budget per API key (UPSTREAM_RATE_LIMIT); null: off. */
  rateLimit: RateLimitSetting | null;
  /** `GET /products` is asked with `include_inactive=true` (UPSTREAM_LIST_INACTIVE). */
  listsInactive: boolean;
}

/** `<requests>/<window>`: at most `requests` upstream requests per `windowMs` for one API key. */
export interface RateLimitSetting {
  requests: number;
  windowMs: number;
}

export const PROFILES: Record<UpstreamProfile, ProfilePreset> = {
  spec: {
    headerPrefix: 'Service',
    signatureTemplate: DEFAULT_SIGNATURE_TEMPLATE,
    callbackSignaturePath: null,
    pageSize: 100,
    orderNoIdempotent: false,
    rateLimit: null,
    listsInactive: false,
  },
  'dujiao-next': {
    headerPrefix: 'Dujiao-Next',
    signatureTemplate: DEFAULT_SIGNATURE_TEMPLATE,
    callbackSignaturePath: `${UPSTREAM_PATH_PREFIX}/callback`,
    pageSize: 50,
    orderNoIdempotent: true,
    rateLimit: { requests: 60, windowMs: 60_000 },
    listsInactive: true,
  },
};

export type DatabaseTarget = { kind: 'postgres'; url: string } | { kind: 'pglite'; path: string | 'memory' };

export interface AppConfigShape {
  nodeEnv: string;
  production: boolean;
  port: number;
  host: string;
  dataDir: string;
  /** True when no UPSTREAM_BASE_URL is set: the built-in sandbox is started in-process. */
  sandbox: boolean;
  database: DatabaseTarget;
  migrateOnStart: boolean;
  upstream: {
    /**
     * UPSTREAM_NAME: the name of the supplier the UPSTREAM_* variables define (CONTRACT §10), the
     * `supplier` of every product, SKU and run of the catalog. The one place the code reads it.
     */
    name: string;
    /** null until the in-process sandbox has started (see `sandbox`). */
    baseUrl: string | null;
    apiKey: string;
    apiSecret: string;
    profile: UpstreamProfile;
    headerPrefix: string;
    signatureTemplate: string;
    orderNoIdempotent: boolean;
    submitUnknownRecheckS: number;
    timeoutMs: number;
  };
  callbacks: {
    publicUrl: string | null;
    /** The path callbacks are signed over; null when there is no public URL and no explicit path. */
    signaturePath: string | null;
    secret: string;
    toleranceS: number;
    /**
     * `verified`: a verified callback is the upstream's word, applied as CONTRACT §6 says; `confirm`:
     * every callback only triggers a confirming read (CALLBACK_TRUST).
     */
    trust: CallbackTrust;
  };
  internalApiToken: string;
  sync: {
    /** null: schedule disabled (`off`). */
    cron: string | null;
    onStart: boolean;
    pageSize: number;
    concurrency: number;
    mode: SyncMode;
    fullEveryMs: number;
    /**
     * UPSTREAM_LIST_INACTIVE: the listing is asked with `include_inactive=true`, so that inactive
     * products come in it with `is_active: false` (unlisted without a read of their own).
     */
    listInactive: boolean;
    /**
     * SYNC_REREAD_ORDERED: after its pages, an incremental run re-reads (`GET /products/{id}`, lowest
     * budget class) up to this many products ordered in the last day, those read fresh longest ago
     * first: stock changes do not move `updated_at`. 0: off.
     */
    rereadOrdered: number;
  };
  orders: {
    pollBaseMs: number;
    pollMaxMs: number;
    stuckAlertS: number;
    maxQuantity: number;
  };
  /** The upstream request budget (src/budget). */
  budget: {
    /** UPSTREAM_RATE_LIMIT; null: `off` (no budget: every request is sent at once). */
    rateLimit: RateLimitSetting | null;
    /** UPSTREAM_RATE_LIMIT_BLOCK_S in milliseconds: a block after a 429 without `Retry-After`. */
    blockMs: number;
    /** SYNC_BUDGET_SHARE: the largest share of the window sync and reconciliation take while others wait, in (0, 1]. */
    syncShare: number;
    /** RECONCILE_BUDGET_SHARE: the largest share of any window the lowest class (`reconcile`) takes, always, in (0, 1]. */
    reconcileShare: number;
    /** ORDER_QUEUE_WAIT_MS: how long a new order waits for the budget before it is answered `queued`. */
    orderQueueWaitMs: number;
    /** ORDER_PRICE_FRESH_S: a SKU cost read this recently serves the price guard without a new read (0: always read). */
    orderPriceFreshS: number;
  };
  walletLowBalance: string | null;
  pricing: { markupPercent: string; markupFixed: string; rounding: string };
  /** The first key encrypts; all of them may decrypt. */
  payloadKeys: Buffer[];
  shopWebhook: { url: string | null; secret: string | null; maxAttempts: number };
  logLevel: LogLevel;
  /** LOG_FORMAT: `pretty` by default when standard output is a terminal, `json` otherwise. */
  logFormat: LogFormat;
  /** RETENTION_DAYS: final rows older than this many days are deleted; null: the job is off (`0`, `off`). */
  retention: { days: number | null };
  /** Product images (CONTRACT §5): mirrored into the database and served at `/media`. */
  media: {
    /** MEDIA_MIRROR: false passes the upstream's image URLs through unchanged. */
    mirror: boolean;
    /** MEDIA_PUBLIC_URL without a trailing slash; null: the relative path `/media`. */
    publicUrl: string | null;
    /** MEDIA_MAX_BYTES: a larger image is refused (its download stops as soon as it is exceeded). */
    maxBytes: number;
  };
  /**
   * RECONCILE_AFTER: when a finished order is read again, in milliseconds after the service found it
   * finished (`1h,1d,7d`); null: `off`.
   */
  reconcile: { afterMs: number[] | null };
  /**
   * Background work of this process: scheduled syncs, order polling, webhook delivery. Off in the
   * `relay` command's in-process instance, which serves one command and exits.
   */
  workers: boolean;
  /** Secrets generated outside production (names only), to be announced in the log. */
  generated: string[];
}

/** Injectable token and value: the validated configuration. */
export class AppConfig implements AppConfigShape {
  nodeEnv!: string;
  production!: boolean;
  port!: number;
  host!: string;
  dataDir!: string;
  sandbox!: boolean;
  database!: DatabaseTarget;
  migrateOnStart!: boolean;
  upstream!: AppConfigShape['upstream'];
  callbacks!: AppConfigShape['callbacks'];
  internalApiToken!: string;
  sync!: AppConfigShape['sync'];
  orders!: AppConfigShape['orders'];
  budget!: AppConfigShape['budget'];
  walletLowBalance!: string | null;
  pricing!: AppConfigShape['pricing'];
  payloadKeys!: Buffer[];
  shopWebhook!: AppConfigShape['shopWebhook'];
  logLevel!: LogLevel;
  logFormat!: LogFormat;
  retention!: AppConfigShape['retention'];
  media!: AppConfigShape['media'];
  reconcile!: AppConfigShape['reconcile'];
  workers!: boolean;
  generated!: string[];

  constructor(shape: AppConfigShape) {
    Object.assign(this, shape);
  }
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export const REQUIRED_IN_PRODUCTION = [
  'DATABASE_URL',
  'UPSTREAM_BASE_URL',
  'UPSTREAM_API_KEY',
  'UPSTREAM_API_SECRET',
  'INTERNAL_API_TOKEN',
  'PAYLOAD_ENCRYPTION_KEY',
] as const;

/** Secrets that may be generated outside production, and kept under the data directory. */
export interface SecretStore {
  /** Returns the stored value for `name`, creating it with `make` when absent. */
  getOrCreate(name: string, make: () => string): string;
}

export interface LoadConfigOptions {
  secrets?: SecretStore;
  /** Standard output is a terminal: LOG_FORMAT defaults to `pretty` (otherwise `json`). */
  tty?: boolean;
}

const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parseDatabaseUrl(r: Reader, dataDir: string): DatabaseTarget {
  const v = r.raw('DATABASE_URL');
  if (v === undefined) return { kind: 'pglite', path: `${dataDir}/pglite` };
  if (v.startsWith('pglite://')) {
    const path = v.slice('pglite://'.length);
    if (path === '') {
      r.fail('DATABASE_URL', 'pglite:// needs a path or "memory" (pglite://./data/pglite, pglite://memory)');
      return { kind: 'pglite', path: 'memory' };
    }
    return { kind: 'pglite', path };
  }
  const url = r.url('DATABASE_URL', ['postgres:', 'postgresql:']);
  if (url === undefined && !r.problems.some((p) => p.startsWith('DATABASE_URL'))) {
    r.fail('DATABASE_URL', 'must be postgres://…, pglite://PATH or pglite://memory');
  }
  return { kind: 'postgres', url: url ?? '' };
}

function parseKeys(r: Reader, raw: string): Buffer[] {
  const keys: Buffer[] = [];
  raw.split(',').forEach((part, i) => {
    const s = part.trim();
    const buf = /^[A-Za-z0-9+/_-]+={0,2}$/.test(s) ? Buffer.from(s, 'base64') : Buffer.alloc(0);
    if (buf.length !== 32) {
      r.fail('PAYLOAD_ENCRYPTION_KEY', `key ${i + 1} must be base64 of exactly 32 bytes (got ${buf.length} bytes)`);
    } else {
      keys.push(buf);
    }
  });
  return keys;
}

/** RECONCILE_AFTER (default `1h,1d,7d`): see parseReconcileAfter. */
function reconcileAfter(r: Reader): number[] | null {
  const parsed = parseReconcileAfter(r.raw('RECONCILE_AFTER') ?? '1h,1d,7d');
  if (parsed === null || Array.isArray(parsed)) return parsed;
  r.fail(
    'RECONCILE_AFTER',
    `must be durations after an order finishes, strictly increasing and comma-separated (1h,1d,7d), or off: ${parsed.problem}`,
  );
  return null;
}

function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

function randomBase64Key(): string {
  return randomBytes(32).toString('base64');
}

/** HOST: a host name (dot-separated labels of up to 63 letters, digits and inner hyphens) or an IP address. */
const HOST_NAME_OR_ADDRESS =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$/;

export function loadConfig(env: Env, options: LoadConfigOptions = {}): AppConfig {
  const r = new Reader(env);
  const nodeEnv = r.raw('NODE_ENV') ?? 'development';
  const production = nodeEnv === 'production';

  if (production) {
    for (const name of REQUIRED_IN_PRODUCTION) {
      if (r.raw(name) === undefined) r.fail(name, 'is required when NODE_ENV=production');
    }
  }

  const dataDir = r.raw('DATA_DIR') ?? './data';
  const generated: string[] = [];
  const secret = (name: string, make: () => string): string => {
    const v = r.raw(name);
    if (v !== undefined) return v;
    if (production) return '';
    generated.push(name);
    return options.secrets ? options.secrets.getOrCreate(name, make) : make();
  };

  const port = r.int('PORT', 3000, 0, 65535);
  const host = r.raw('HOST') ?? '0.0.0.0';
  // an address or a host name to listen on (a bad one would fail only at listen, without naming HOST)
  if (!HOST_NAME_OR_ADDRESS.test(host)) {
    r.fail('HOST', `must be an IP address or a host name to listen on, got "${host}"`);
  }
  const database = parseDatabaseUrl(r, dataDir);
  const migrateOnStart = r.bool('DB_MIGRATE_ON_START', true);

  const profile = r.oneOf<UpstreamProfile>('UPSTREAM_PROFILE', 'spec', ['spec', 'dujiao-next']);
  const preset = PROFILES[profile];
  const baseUrl = r.url('UPSTREAM_BASE_URL', ['http:', 'https:']) ?? null;
  const sandbox = baseUrl === null && r.raw('UPSTREAM_BASE_URL') === undefined;
  // the built-in sandbox listens on PORT + 1
  if (sandbox && port === 65535)
    r.fail('PORT', 'must be below 65535 without UPSTREAM_BASE_URL (the built-in sandbox upstream listens on PORT + 1), got 65535');
  if (baseUrl !== null && !new URL(baseUrl).pathname.replace(/\/+$/, '').endsWith(UPSTREAM_PATH_PREFIX)) {
    r.fail('UPSTREAM_BASE_URL', `must include the path prefix ${UPSTREAM_PATH_PREFIX}, got "${redactUrl(baseUrl)}"`);
  }
  const apiKey = r.raw('UPSTREAM_API_KEY') ?? (sandbox ? SANDBOX_API_KEY : '');
  const apiSecret = r.raw('UPSTREAM_API_SECRET') ?? (sandbox ? SANDBOX_API_SECRET : '');
  if (!sandbox && !production) {
    if (!apiKey) r.fail('UPSTREAM_API_KEY', 'is required with UPSTREAM_BASE_URL');
    if (!apiSecret) r.fail('UPSTREAM_API_SECRET', 'is required with UPSTREAM_BASE_URL');
  }
  const headerPrefix = r.raw('UPSTREAM_HEADER_PREFIX') ?? preset.headerPrefix;
  if (!/^[A-Za-z0-9-]+$/.test(headerPrefix)) {
    r.fail('UPSTREAM_HEADER_PREFIX', `must be letters, digits and dashes, got "${headerPrefix}"`);
  }
  const templateRaw = env['UPSTREAM_SIGNATURE_TEMPLATE'];
  const signatureTemplate =
    templateRaw !== undefined && templateRaw !== '' ? parseSignatureTemplate(templateRaw) : preset.signatureTemplate;
  // Any canonical string built from the placeholders of CONTRACT §4 (the upstream decides it); a
  // `{name}` that is not one of them is a typo, refused rather than signed as literal text.
  const unknownPlaceholders = [...signatureTemplate.matchAll(/\{([A-Za-z0-9_]+)\}/g)]
    .map((m) => m[1])
    .filter((n) => !(SIGNATURE_PLACEHOLDERS as readonly string[]).includes(n));
  if (unknownPlaceholders.length > 0) {
    r.fail(
      'UPSTREAM_SIGNATURE_TEMPLATE',
      `has unknown placeholders ${unknownPlaceholders.map((n) => `{${n}}`).join(', ')} (known: ` +
        `${SIGNATURE_PLACEHOLDERS.map((n) => `{${n}}`).join(', ')})`,
    );
  } else if (templatePlaceholders(signatureTemplate).length === 0) {
    r.fail('UPSTREAM_SIGNATURE_TEMPLATE', 'must contain at least one placeholder ({method}, {path}, {timestamp}, {body_md5}…)');
  }

  const upstreamName = r.raw('UPSTREAM_NAME') ?? 'main';
  if (!/^[a-z][a-z0-9-]{0,31}$/.test(upstreamName)) {
    r.fail(
      'UPSTREAM_NAME',
      `must match [a-z][a-z0-9-]{0,31} (a lower-case letter, then up to 31 letters, digits or dashes), got "${upstreamName}"`,
    );
  }
  const mediaPublicUrl = r.url('MEDIA_PUBLIC_URL', ['http:', 'https:']) ?? null;

  const publicUrl = r.url('CALLBACK_PUBLIC_URL', ['http:', 'https:']) ?? null;
  const explicitPath = r.raw('CALLBACK_SIGNATURE_PATH');
  if (explicitPath !== undefined && !explicitPath.startsWith('/')) {
    r.fail('CALLBACK_SIGNATURE_PATH', `must be a path starting with /, got "${explicitPath}"`);
  }
  const signaturePath = explicitPath ?? preset.callbackSignaturePath ?? (publicUrl !== null ? new URL(publicUrl).pathname : null);

  const internalApiToken = secret('INTERNAL_API_TOKEN', () => `dev_${randomHex(24)}`);
  // sent as `Authorization: Bearer <token>`: a token with white space in it could never match
  if (/\s/.test(internalApiToken))
    r.fail('INTERNAL_API_TOKEN', 'must not contain white space (it is sent as `Authorization: Bearer <token>`)');
  const keyRaw = secret('PAYLOAD_ENCRYPTION_KEY', randomBase64Key);
  const payloadKeys = keyRaw ? parseKeys(r, keyRaw) : [];

  const cronRaw = r.raw('SYNC_CRON') ?? '*/15 * * * *';
  let cron: string | null = cronRaw;
  if (cronRaw.toLowerCase() === 'off') cron = null;
  else if (!validateCronExpression(cronRaw).valid) r.fail('SYNC_CRON', `is not a valid cron expression: "${cronRaw}"`);

  const pollBaseMs = r.int('ORDER_POLL_BASE_MS', 5000, 10, 86_400_000);
  const pollMaxMs = r.int('ORDER_POLL_MAX_MS', 600_000, 10, 86_400_000);
  if (pollMaxMs < pollBaseMs) r.fail('ORDER_POLL_MAX_MS', `must not be below ORDER_POLL_BASE_MS (${pollBaseMs})`);

  const webhookUrl = r.url('SHOP_WEBHOOK_URL', ['http:', 'https:']) ?? null;
  const webhookSecret = r.raw('SHOP_WEBHOOK_SECRET') ?? null;
  if (webhookUrl !== null && webhookSecret === null) {
    r.fail('SHOP_WEBHOOK_SECRET', 'is required with SHOP_WEBHOOK_URL (deliveries are signed)');
  }

  const config = new AppConfig({
    nodeEnv,
    production,
    port,
    host,
    dataDir,
    sandbox,
    database,
    migrateOnStart,
    upstream: {
      name: upstreamName,
      baseUrl: baseUrl === null ? null : baseUrl.replace(/\/+$/, ''),
      apiKey,
      apiSecret,
      profile,
      headerPrefix,
      signatureTemplate,
      orderNoIdempotent: r.bool('UPSTREAM_ORDER_NO_IDEMPOTENT', preset.orderNoIdempotent),
      submitUnknownRecheckS: r.int('SUBMIT_UNKNOWN_RECHECK_S', 60, 1, 86_400),
      timeoutMs: r.int('UPSTREAM_TIMEOUT_MS', 10_000, 50, 600_000),
    },
    callbacks: {
      publicUrl,
      signaturePath,
      secret: r.raw('CALLBACK_SECRET') ?? apiSecret,
      toleranceS: r.int('CALLBACK_TOLERANCE_S', 60, 1, 86_400),
      trust: r.oneOf<CallbackTrust>('CALLBACK_TRUST', 'verified', ['verified', 'confirm']),
    },
    internalApiToken,
    sync: {
      cron,
      onStart: r.bool('SYNC_ON_START', true),
      pageSize: r.int('SYNC_PAGE_SIZE', preset.pageSize, 1, 1000),
      concurrency: r.int('SYNC_CONCURRENCY', 4, 1, 64),
      mode: r.oneOf<SyncMode>('SYNC_MODE', 'auto', ['auto', 'full', 'incremental']),
      fullEveryMs: r.duration('SYNC_FULL_EVERY', 6 * 3_600_000),
      listInactive: r.bool('UPSTREAM_LIST_INACTIVE', preset.listsInactive),
      rereadOrdered: r.int('SYNC_REREAD_ORDERED', 10, 0, 1000),
    },
    orders: {
      pollBaseMs,
      pollMaxMs,
      stuckAlertS: r.int('STUCK_ORDER_ALERT_S', 86_400, 1, 365 * 86_400),
      maxQuantity: r.int('ORDER_MAX_QUANTITY', 1000, 1, 1_000_000),
    },
    budget: {
      rateLimit: r.rateLimit('UPSTREAM_RATE_LIMIT', preset.rateLimit),
      blockMs: Math.max(
        1,
        Math.round(
          1000 *
            r.number('UPSTREAM_RATE_LIMIT_BLOCK_S', 30, {
              min: 0,
              max: 86_400,
              what: 'a number of seconds greater than 0, at most 86400 (30, 0.5)',
            }),
        ),
      ),
      syncShare: r.number('SYNC_BUDGET_SHARE', 0.5, { min: 0, max: 1, what: 'a number greater than 0 and at most 1 (0.5)' }),
      reconcileShare: r.number('RECONCILE_BUDGET_SHARE', 0.2, { min: 0, max: 1, what: 'a number greater than 0 and at most 1 (0.2)' }),
      orderQueueWaitMs: r.int('ORDER_QUEUE_WAIT_MS', 5000, 0, 600_000),
      orderPriceFreshS: r.int('ORDER_PRICE_FRESH_S', 30, 0, 86_400),
    },
    walletLowBalance: r.decimal('WALLET_LOW_BALANCE', null, { nonNegative: true }),
    pricing: {
      markupPercent: r.decimal('PRICE_MARKUP_PERCENT', '0') ?? '0',
      markupFixed: r.decimal('PRICE_MARKUP_FIXED', '0') ?? '0',
      rounding: r.decimal('PRICE_ROUNDING', '0.01', { positive: true }) ?? '0.01',
    },
    payloadKeys,
    shopWebhook: {
      url: webhookUrl,
      secret: webhookSecret,
      maxAttempts: r.int('SHOP_WEBHOOK_MAX_ATTEMPTS', 12, 1, 100),
    },
    logLevel: r.oneOf<LogLevel>('LOG_LEVEL', 'info', LOG_LEVELS),
    logFormat: r.oneOf<LogFormat>('LOG_FORMAT', options.tty === true ? 'pretty' : 'json', ['json', 'pretty']),
    retention: { days: r.daysOrOff('RETENTION_DAYS', 90, 36_500) },
    media: {
      mirror: r.bool('MEDIA_MIRROR', true),
      publicUrl: mediaPublicUrl === null ? null : mediaPublicUrl.replace(/\/+$/, ''),
      maxBytes: r.int('MEDIA_MAX_BYTES', 5_242_880, 1, 1_073_741_824),
    },
    reconcile: { afterMs: reconcileAfter(r) },
    workers: true,
    generated,
  });

  // The defaults are priced with as any rule is: refused here, naming the variable, rather than by every
  // catalog write later (a markup below -100 %, more digits than prices are computed with).
  try {
    validateMarkupInput(config.pricing);
  } catch (e) {
    if (!(e instanceof PricingError)) throw e;
    const name = PRICING_VARIABLES[e.field] ?? e.field;
    if (!r.problems.some((p) => p.startsWith(name))) r.fail(name, e.message.replace(/^\S+ /, ''));
  }

  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}
