import { ConfigError, loadConfig, PROFILES, REQUIRED_IN_PRODUCTION } from './app-config.js';

const KEY = Buffer.alloc(32, 7).toString('base64');
const KEY2 = Buffer.alloc(32, 9).toString('base64');

const production = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://relay:pw@db:5432/relay',
  UPSTREAM_BASE_URL: 'https://supplier.example/api/v1/upstream',
  UPSTREAM_API_KEY: 'ak',
  UPSTREAM_API_SECRET: 'as',
  INTERNAL_API_TOKEN: 'tok',
  PAYLOAD_ENCRYPTION_KEY: KEY,
};

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('config', () => {
  it('starts with no configuration at all: embedded database, sandbox, generated secrets', () => {
    const c = loadConfig({});
    expect(c.production).toBe(false);
    expect(c.port).toBe(3000);
    expect(c.host).toBe('0.0.0.0');
    expect(c.database).toEqual({ kind: 'pglite', path: './data/pglite' });
    expect(c.sandbox).toBe(true);
    expect(c.upstream.apiKey).toBe('sandbox-api-key');
    expect(c.upstream.profile).toBe('spec');
    expect(c.upstream.headerPrefix).toBe('Service');
    expect(c.upstream.signatureTemplate).toBe('{method}\n{path}\n{timestamp}\n{body_md5}');
    expect(c.internalApiToken).toMatch(/^dev_[0-9a-f]{48}$/);
    expect(c.payloadKeys).toHaveLength(1);
    expect(c.payloadKeys[0]).toHaveLength(32);
    expect(c.generated).toEqual(['INTERNAL_API_TOKEN', 'PAYLOAD_ENCRYPTION_KEY']);
    expect(c.sync).toEqual({
      cron: '*/15 * * * *',
      onStart: true,
      pageSize: 100,
      concurrency: 4,
      mode: 'auto',
      fullEveryMs: 6 * 3600_000,
      listInactive: false,
      rereadOrdered: 10,
    });
    expect(c.orders).toEqual({ pollBaseMs: 5000, pollMaxMs: 600_000, stuckAlertS: 86_400, maxQuantity: 1000 });
    expect(c.pricing).toEqual({ markupPercent: '0', markupFixed: '0', rounding: '0.01' });
    expect(c.callbacks.toleranceS).toBe(60);
    expect(c.callbacks.trust).toBe('verified');
    expect(c.callbacks.publicUrl).toBeNull();
    expect(c.upstream.timeoutMs).toBe(10_000);
    expect(c.shopWebhook.maxAttempts).toBe(12);
    expect(c.migrateOnStart).toBe(true);
    expect(c.retention).toEqual({ days: 90 });
  });

  it('keeps generated secrets in the store it is given', () => {
    const kept: Record<string, string> = { INTERNAL_API_TOKEN: 'dev_kept' };
    const store = { getOrCreate: (n: string, make: () => string) => (kept[n] ??= make()) };
    const a = loadConfig({}, { secrets: store });
    const b = loadConfig({}, { secrets: store });
    expect(a.internalApiToken).toBe('dev_kept');
    expect(b.payloadKeys[0].equals(a.payloadKeys[0])).toBe(true);
  });

  it('refuses production without the required variables, naming each one', () => {
    const p = problems({ NODE_ENV: 'production' });
    for (const name of REQUIRED_IN_PRODUCTION) expect(p.some((x) => x.startsWith(`${name}:`))).toBe(true);
    expect(p).toHaveLength(REQUIRED_IN_PRODUCTION.length);
    const { UPSTREAM_API_SECRET: _omit, ...missingOne } = production;
    expect(problems(missingOne)).toEqual(['UPSTREAM_API_SECRET: is required when NODE_ENV=production']);
    expect(loadConfig(production).production).toBe(true);
  });

  it('logs JSON unless told otherwise, pretty by default at a terminal; LOG_FORMAT decides either way', () => {
    expect(loadConfig(production).logFormat).toBe('json');
    expect(loadConfig(production, { tty: true }).logFormat).toBe('pretty');
    expect(loadConfig({ ...production, LOG_FORMAT: 'json' }, { tty: true }).logFormat).toBe('json');
    expect(loadConfig({ ...production, LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
  });

  it.each([
    ['PORT', 'eighty', /PORT: must be an integer/],
    ['PORT', '70000', /PORT: must be between/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL: must be a postgres: or postgresql: URL/],
    ['DATABASE_URL', 'not a url', /DATABASE_URL: is not a valid URL/],
    ['DATABASE_URL', 'pglite://', /DATABASE_URL: pglite:\/\/ needs a path/],
    ['UPSTREAM_BASE_URL', 'ftp://x/api/v1/upstream', /UPSTREAM_BASE_URL: must be a http: or https: URL/],
    ['UPSTREAM_BASE_URL', 'https://supplier.example/api', /must include the path prefix/],
    ['PAYLOAD_ENCRYPTION_KEY', Buffer.alloc(16).toString('base64'), /key 1 must be base64 of exactly 32 bytes \(got 16 bytes\)/],
    ['PAYLOAD_ENCRYPTION_KEY', `${KEY},short`, /key 2 must be base64 of exactly 32 bytes/],
    ['UPSTREAM_PROFILE', 'shopify', /UPSTREAM_PROFILE: must be one of spec, dujiao-next/],
    ['SYNC_CRON', 'every minute', /SYNC_CRON: is not a valid cron expression/],
    ['SYNC_MODE', 'sometimes', /SYNC_MODE: must be one of auto, full, incremental/],
    ['SYNC_FULL_EVERY', 'six hours', /SYNC_FULL_EVERY: must be a duration/],
    ['SYNC_ON_START', 'maybe', /SYNC_ON_START: must be true or false/],
    ['PRICE_ROUNDING', '0', /PRICE_ROUNDING: must be greater than 0/],
    ['PRICE_MARKUP_PERCENT', '10%', /PRICE_MARKUP_PERCENT: must be a decimal number/],
    ['UPSTREAM_TIMEOUT_MS', '-5', /UPSTREAM_TIMEOUT_MS: must be between/],
    ['CALLBACK_PUBLIC_URL', 'relay.example/cb', /CALLBACK_PUBLIC_URL: is not a valid URL/],
    ['CALLBACK_SIGNATURE_PATH', 'callbacks', /CALLBACK_SIGNATURE_PATH: must be a path/],
    [
      'UPSTREAM_SIGNATURE_TEMPLATE',
      '{method}\\n{path}\\n{timestamp}\\n{body_md}',
      /UPSTREAM_SIGNATURE_TEMPLATE: has unknown placeholders \{body_md\}/,
    ],
    ['UPSTREAM_SIGNATURE_TEMPLATE', 'static-text', /UPSTREAM_SIGNATURE_TEMPLATE: must contain at least one placeholder/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL: must be one of/],
    ['CALLBACK_TRUST', 'always', /CALLBACK_TRUST: must be one of/],
    ['LOG_FORMAT', 'yaml', /LOG_FORMAT: must be one of json, pretty/],
    ['WALLET_LOW_BALANCE', 'ten', /WALLET_LOW_BALANCE: must be a decimal/],
    ['SHOP_WEBHOOK_URL', 'https://shop.example/hook', /SHOP_WEBHOOK_SECRET: is required with SHOP_WEBHOOK_URL/],
  ])('refuses %s=%s with a message naming it', (name, value, message) => {
    const p = problems({ ...production, [name]: value });
    expect(p.join('\n')).toMatch(message);
  });

  // A refused URL is echoed so that the operator sees what was read, but never its user and password
  // nor a secret-looking query parameter: the message goes to stderr and into the orchestrator's logs.
  it.each([
    ['DATABASE_URL', 'mysql://u:s3cretpw@h/db', 'DATABASE_URL: must be a postgres: or postgresql: URL, got "mysql://***@h/db"'],
    ['DATABASE_URL', 'postgres//relay:s3cretpw@db/relay', 'DATABASE_URL: is not a valid URL: "postgres//***@db/relay"'],
    ['DATABASE_URL', 'postgres://relay:s3cret#pw@db/relay', 'DATABASE_URL: is not a valid URL: "postgres://***@db/relay"'],
    [
      'UPSTREAM_BASE_URL',
      'ftp://u:s3cretpw@supplier.example/api/v1/upstream',
      'UPSTREAM_BASE_URL: must be a http: or https: URL, got "ftp://***@supplier.example/api/v1/upstream"',
    ],
    [
      'UPSTREAM_BASE_URL',
      'https://u:s3cretpw@supplier.example/api?token=s3cretpw&page=1',
      'UPSTREAM_BASE_URL: must include the path prefix /api/v1/upstream, got "https://***@supplier.example/api?token=***&page=1"',
    ],
    [
      'CALLBACK_PUBLIC_URL',
      'ftp://relay.example/cb?key=s3cretpw',
      'CALLBACK_PUBLIC_URL: must be a http: or https: URL, got "ftp://relay.example/cb?key=***"',
    ],
  ])('refuses %s=%s without printing its credentials', (name, value, message) => {
    const p = problems({ ...production, [name]: value });
    expect(p).toEqual([message]);
    expect(p.join('\n')).not.toContain('s3cret');
  });

  it('refuses SHOP_WEBHOOK_URL without printing its credentials, and the whole message (as main.ts prints it) holds none', () => {
    let message = '';
    try {
      loadConfig({
        ...production,
        DATABASE_URL: 'mysql://u:s3cretpw@h/db',
        SHOP_WEBHOOK_URL: 'ftp://hook:s3cretpw@shop.example/hook?secret=s3cretpw',
        SHOP_WEBHOOK_SECRET: 'x',
      });
    } catch (e) {
      message = (e as ConfigError).message;
    }
    expect(message).toContain('DATABASE_URL: must be a postgres: or postgresql: URL, got "mysql://***@h/db"');
    expect(message).toContain('SHOP_WEBHOOK_URL: must be a http: or https: URL, got "ftp://***@shop.example/hook?secret=***"');
    expect(message).not.toContain('s3cretpw');
  });

  it('refuses an INTERNAL_API_TOKEN with white space inside (a bearer token could never match it)', () => {
    expect(problems({ INTERNAL_API_TOKEN: 'two words' })).toEqual([
      'INTERNAL_API_TOKEN: must not contain white space (it is sent as `Authorization: Bearer <token>`)',
    ]);
    expect(loadConfig({ INTERNAL_API_TOKEN: '  padded-token  ' }).internalApiToken).toBe('padded-token');
  });

  it('takes HOST as an IP address or a host name, and refuses anything else naming it', () => {
    for (const host of ['0.0.0.0', '127.0.0.1', '::', '::1', 'fe80::1', 'localhost', 'relay-1.internal.example']) {
      expect(loadConfig({ HOST: host }).host).toBe(host);
    }
    for (const host of ['http://0.0.0.0', 'relay_1', 'a b', '-bad.example', 'host:3000x']) {
      expect(problems({ HOST: host })).toEqual([`HOST: must be an IP address or a host name to listen on, got "${host}"`]);
    }
  });

  it('refuses PORT=65535 with the built-in sandbox (it listens on PORT + 1), not with an upstream', () => {
    expect(problems({ PORT: '65535' })).toEqual([
      'PORT: must be below 65535 without UPSTREAM_BASE_URL (the built-in sandbox upstream listens on PORT + 1), got 65535',
    ]);
    expect(
      loadConfig({
        PORT: '65535',
        UPSTREAM_BASE_URL: 'https://up.example/api/v1/upstream',
        UPSTREAM_API_KEY: 'k',
        UPSTREAM_API_SECRET: 's',
      }).port,
    ).toBe(65535);
  });

  it('takes markups at their limits: -100 %, 15 digits before the point, 8 after', () => {
    const c = loadConfig({ PRICE_MARKUP_PERCENT: '-100', PRICE_MARKUP_FIXED: '999999999999999.12345678', PRICE_ROUNDING: '0.00000001' });
    expect(c.pricing).toEqual({ markupPercent: '-100', markupFixed: '999999999999999.12345678', rounding: '0.00000001' });
  });

  it('reads PRICE_MARKUP_PERCENT, PRICE_MARKUP_FIXED and PRICE_ROUNDING as decimal strings', () => {
    const c = loadConfig({ ...production, PRICE_MARKUP_PERCENT: '12.5', PRICE_MARKUP_FIXED: '0.30', PRICE_ROUNDING: '0.10' });
    expect(c.pricing).toEqual({ markupPercent: '12.5', markupFixed: '0.30', rounding: '0.10' });
    const d = loadConfig({ PRICE_MARKUP_PERCENT: ' 8 ', PRICE_MARKUP_FIXED: '2', PRICE_ROUNDING: '1' });
    expect(d.pricing).toEqual({ markupPercent: '8', markupFixed: '2', rounding: '1' });
  });

  it.each([
    ['PRICE_MARKUP_PERCENT', 'ten', 'PRICE_MARKUP_PERCENT: must be a decimal number such as 1.50, got "ten"'],
    ['PRICE_MARKUP_PERCENT', '1e2', 'PRICE_MARKUP_PERCENT: must be a decimal number such as 1.50, got "1e2"'],
    ['PRICE_MARKUP_FIXED', 'abc', 'PRICE_MARKUP_FIXED: must be a decimal number such as 1.50, got "abc"'],
    ['PRICE_MARKUP_FIXED', '1,50', 'PRICE_MARKUP_FIXED: must be a decimal number such as 1.50, got "1,50"'],
    ['PRICE_ROUNDING', '-0.05', 'PRICE_ROUNDING: must be greater than 0, got -0.05'],
    ['PRICE_ROUNDING', '0.00', 'PRICE_ROUNDING: must be greater than 0, got 0.00'],
    ['PRICE_ROUNDING', 'cent', 'PRICE_ROUNDING: must be a decimal number such as 1.50, got "cent"'],
    // priced with as any rule is: refused at start rather than by every catalog write
    ['PRICE_MARKUP_PERCENT', '-150', 'PRICE_MARKUP_PERCENT: must not be below -100'],
    ['PRICE_MARKUP_PERCENT', '1000000000000000', 'PRICE_MARKUP_PERCENT: must have at most 15 digits before the point and 8 after it'],
    ['PRICE_MARKUP_FIXED', '0.123456789', 'PRICE_MARKUP_FIXED: must have at most 15 digits before the point and 8 after it'],
    ['PRICE_ROUNDING', '0.000000001', 'PRICE_ROUNDING: must have at most 15 digits before the point and 8 after it'],
  ])('refuses %s=%s with exactly one clear message', (name, value, message) => {
    expect(problems({ ...production, [name]: value })).toEqual([message]);
  });

  it.each([
    ['false', false],
    ['FALSE', false],
    ['0', false],
    ['no', false],
    ['off', false],
    ['true', true],
    ['1', true],
    ['', true],
  ])('reads DB_MIGRATE_ON_START=%p as %p', (value, expected) => {
    expect(loadConfig({ ...production, DB_MIGRATE_ON_START: value }).migrateOnStart).toBe(expected);
  });

  it.each([
    ['0', 0],
    ['25', 25],
    ['1000', 1000],
  ])('reads SYNC_REREAD_ORDERED=%p as %p products a run (0: off)', (value, expected) => {
    expect(loadConfig({ ...production, SYNC_REREAD_ORDERED: value }).sync.rereadOrdered).toBe(expected);
  });

  it.each([
    ['-1', 'must be between 0 and 1000, got -1'],
    ['1001', 'must be between 0 and 1000, got 1001'],
    ['ten', 'must be an integer, got "ten"'],
  ])('refuses SYNC_REREAD_ORDERED=%p, naming it', (value, why) => {
    expect(problems({ ...production, SYNC_REREAD_ORDERED: value })).toEqual([`SYNC_REREAD_ORDERED: ${why}`]);
  });

  it('refuses a DB_MIGRATE_ON_START that is not a boolean', () => {
    expect(problems({ ...production, DB_MIGRATE_ON_START: 'later' })).toEqual(['DB_MIGRATE_ON_START: must be true or false, got "later"']);
  });

  it.each([
    ['30', 30],
    ['1', 1],
    ['36500', 36_500],
    [' 365 ', 365],
    ['0', null],
    ['00', null],
    ['off', null],
    ['OFF', null],
    ['', 90],
  ])('reads RETENTION_DAYS=%p as %p days (null: the retention job is off)', (value, expected) => {
    expect(loadConfig({ ...production, RETENTION_DAYS: value }).retention.days).toBe(expected);
  });

  it.each(['-1', '1.5', '90d', 'never', '36501', 'false'])('refuses RETENTION_DAYS=%p, naming it', (value) => {
    expect(problems({ ...production, RETENTION_DAYS: value })).toEqual([
      `RETENTION_DAYS: must be a whole number of days from 1 to 36500, or 0 or off to disable it, got "${value}"`,
    ]);
  });

  it('collects every problem at once', () => {
    expect(problems({ PORT: 'x', SYNC_MODE: 'y', PRICE_ROUNDING: 'z' })).toHaveLength(3);
  });

  it('applies the dujiao-next profile presets, each still settable on its own', () => {
    const c = loadConfig({
      ...production,
      UPSTREAM_PROFILE: 'dujiao-next',
      CALLBACK_PUBLIC_URL: 'https://relay.example/callbacks/upstream',
    });
    expect(c.upstream.headerPrefix).toBe('Dujiao-Next');
    expect(c.upstream.orderNoIdempotent).toBe(true);
    expect(c.sync.pageSize).toBe(50);
    expect(c.callbacks.signaturePath).toBe('/api/v1/upstream/callback');
    const d = loadConfig({
      ...production,
      UPSTREAM_PROFILE: 'dujiao-next',
      UPSTREAM_HEADER_PREFIX: 'X',
      UPSTREAM_ORDER_NO_IDEMPOTENT: 'false',
      SYNC_PAGE_SIZE: '20',
      CALLBACK_SIGNATURE_PATH: '/cb',
    });
    expect([d.upstream.headerPrefix, d.upstream.orderNoIdempotent, d.sync.pageSize, d.callbacks.signaturePath]).toEqual([
      'X',
      false,
      20,
      '/cb',
    ]);
    expect(PROFILES.spec.orderNoIdempotent).toBe(false);
  });

  it('signs callbacks over the path of CALLBACK_PUBLIC_URL under the spec profile, with the API secret by default', () => {
    const c = loadConfig({ ...production, CALLBACK_PUBLIC_URL: 'https://relay.example/hooks/upstream?x=1' });
    expect(c.callbacks.signaturePath).toBe('/hooks/upstream');
    expect(c.callbacks.secret).toBe('as');
    expect(loadConfig({ ...production, CALLBACK_SECRET: 'cs' }).callbacks.secret).toBe('cs');
  });

  it('reads a custom template with \\n, pglite URLs, durations, off, key rotation', () => {
    const c = loadConfig({
      ...production,
      UPSTREAM_SIGNATURE_TEMPLATE: '{api_key}\\n{timestamp}\\n{body_sha256}',
      DATABASE_URL: 'pglite://memory',
      SYNC_FULL_EVERY: '90m',
      SYNC_CRON: 'off',
      PAYLOAD_ENCRYPTION_KEY: `${KEY}, ${KEY2}`,
    });
    expect(c.upstream.signatureTemplate).toBe('{api_key}\n{timestamp}\n{body_sha256}');
    expect(c.database).toEqual({ kind: 'pglite', path: 'memory' });
    expect(c.sync.fullEveryMs).toBe(90 * 60_000);
    expect(c.sync.cron).toBeNull();
    expect(c.payloadKeys.map((k) => k[0])).toEqual([7, 9]);
  });

  it.each(['{api_key}{method}{path}', '{method}\\n{path}\\n{body}', '{timestamp}', '{body_sha256}:{api_key}'])(
    'takes any template built from the placeholders of CONTRACT §4 (%s)',
    (template) => {
      expect(loadConfig({ ...production, UPSTREAM_SIGNATURE_TEMPLATE: template }).upstream.signatureTemplate).toBe(
        template.replace(/\\n/g, '\n'),
      );
    },
  );

  it('reads the request budget: off under spec, 60/60s under dujiao-next, each variable settable', () => {
    expect(loadConfig(production).budget).toEqual({
      rateLimit: null,
      blockMs: 30_000,
      syncShare: 0.5,
      reconcileShare: 0.2,
      orderQueueWaitMs: 5000,
      orderPriceFreshS: 30,
    });
    expect(loadConfig({ ...production, UPSTREAM_PROFILE: 'dujiao-next' }).budget.rateLimit).toEqual({ requests: 60, windowMs: 60_000 });
    expect(loadConfig({ ...production, UPSTREAM_PROFILE: 'dujiao-next', UPSTREAM_RATE_LIMIT: 'off' }).budget.rateLimit).toBeNull();
    expect(PROFILES['dujiao-next'].rateLimit).toEqual({ requests: 60, windowMs: 60_000 });
    const rate = (v: string) => loadConfig({ ...production, UPSTREAM_RATE_LIMIT: v }).budget.rateLimit;
    expect(rate('60/1m')).toEqual({ requests: 60, windowMs: 60_000 });
    expect(rate('20/2s')).toEqual({ requests: 20, windowMs: 2000 });
    expect(rate('10 / 500ms')).toEqual({ requests: 10, windowMs: 500 });
    expect(rate('OFF')).toBeNull();
    const c = loadConfig({
      ...production,
      UPSTREAM_RATE_LIMIT_BLOCK_S: '0.3',
      SYNC_BUDGET_SHARE: '1',
      RECONCILE_BUDGET_SHARE: '0.05',
      ORDER_QUEUE_WAIT_MS: '0',
      ORDER_PRICE_FRESH_S: '0',
    });
    expect(c.budget).toEqual({
      rateLimit: null,
      blockMs: 300,
      syncShare: 1,
      reconcileShare: 0.05,
      orderQueueWaitMs: 0,
      orderPriceFreshS: 0,
    });
  });

  it.each([
    ['UPSTREAM_RATE_LIMIT', '60'],
    ['UPSTREAM_RATE_LIMIT', '60/60'],
    ['UPSTREAM_RATE_LIMIT', '60/60h'],
    ['UPSTREAM_RATE_LIMIT', '0/60s'],
    ['UPSTREAM_RATE_LIMIT', '60/0s'],
    ['UPSTREAM_RATE_LIMIT', 'sixty/1m'],
    ['UPSTREAM_RATE_LIMIT_BLOCK_S', '0'],
    ['UPSTREAM_RATE_LIMIT_BLOCK_S', '-5'],
    ['UPSTREAM_RATE_LIMIT_BLOCK_S', 'long'],
    ['SYNC_BUDGET_SHARE', '0'],
    ['SYNC_BUDGET_SHARE', '1.5'],
    ['SYNC_BUDGET_SHARE', 'half'],
    ['RECONCILE_BUDGET_SHARE', '0'],
    ['RECONCILE_BUDGET_SHARE', '1.2'],
    ['ORDER_QUEUE_WAIT_MS', '-1'],
    ['ORDER_QUEUE_WAIT_MS', '5s'],
    ['ORDER_PRICE_FRESH_S', '-1'],
  ])('refuses the budget variable %s=%s naming it', (name, value) => {
    const p = problems({ ...production, [name]: value });
    expect(p).toHaveLength(1);
    expect(p[0].startsWith(`${name}: `)).toBe(true);
  });

  it('reads RECONCILE_AFTER: 1h,1d,7d by default, off, a scaled schedule; refuses a bad one naming it', () => {
    expect(loadConfig(production).reconcile).toEqual({ afterMs: [3_600_000, 86_400_000, 7 * 86_400_000] });
    expect(loadConfig({ ...production, RECONCILE_AFTER: 'off' }).reconcile.afterMs).toBeNull();
    expect(loadConfig({ ...production, RECONCILE_AFTER: '300ms,1s' }).reconcile.afterMs).toEqual([300, 1000]);
    for (const bad of ['1d,1h', '1h,', 'soon']) {
      const p = problems({ ...production, RECONCILE_AFTER: bad });
      expect(p).toHaveLength(1);
      expect(p[0].startsWith('RECONCILE_AFTER: ')).toBe(true);
    }
  });
});
