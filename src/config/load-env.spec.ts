/**
 * CONTRACT §3: configuration comes from the environment, "a `.env` file is read too". The `.env` of
 * the working directory is read without overriding the real environment; explicit overrides win over
 * both. Each test runs in a fresh temporary directory (the working directory while it runs), and the
 * process environment is put back afterwards.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadProcessConfig } from './load-env.js';

/** Every variable a test here sets, through `.env` or the environment. */
const NAMES = [
  'PORT',
  'HOST',
  'LOG_LEVEL',
  'SYNC_CRON',
  'SYNC_MODE',
  'SYNC_PAGE_SIZE',
  'PRICE_MARKUP_FIXED',
  'SHOP_WEBHOOK_URL',
  'SHOP_WEBHOOK_SECRET',
  'UPSTREAM_SIGNATURE_TEMPLATE',
  'INTERNAL_API_TOKEN',
  'PAYLOAD_ENCRYPTION_KEY',
  'DATA_DIR',
  'DATABASE_URL',
  'UPSTREAM_BASE_URL',
  'UPSTREAM_API_KEY',
  'UPSTREAM_API_SECRET',
  'NODE_ENV',
];

const KEY = Buffer.alloc(32, 5).toString('base64');

let dir: string;
let cwd: string;
let saved: NodeJS.ProcessEnv;

beforeEach(() => {
  saved = { ...process.env };
  for (const name of NAMES) delete process.env[name];
  cwd = process.cwd();
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'relay-load-env-')));
  process.chdir(dir);
});

afterEach(() => {
  process.chdir(cwd);
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
  rmSync(dir, { recursive: true, force: true });
});

function writeDotenv(text: string): void {
  writeFileSync(join(dir, '.env'), text);
}

describe('loadProcessConfig: the .env file', () => {
  it('loads values from .env in the working directory', () => {
    writeDotenv(
      [
        'PORT=4321',
        'HOST=127.0.0.1',
        'LOG_LEVEL=debug',
        'SYNC_PAGE_SIZE=25',
        `INTERNAL_API_TOKEN=tok-from-file`,
        `PAYLOAD_ENCRYPTION_KEY=${KEY}`,
        '',
      ].join('\n'),
    );
    const c = loadProcessConfig();
    expect(c.port).toBe(4321);
    expect(c.host).toBe('127.0.0.1');
    expect(c.logLevel).toBe('debug');
    expect(c.sync.pageSize).toBe(25);
    expect(c.internalApiToken).toBe('tok-from-file');
    expect(c.payloadKeys.map((k) => k.toString('base64'))).toEqual([KEY]);
    expect(c.generated).toEqual([]);
  });

  it('lets the real environment win over .env', () => {
    writeDotenv('PORT=4321\nLOG_LEVEL=debug\nSYNC_MODE=full\n');
    process.env['PORT'] = '5555';
    process.env['LOG_LEVEL'] = 'warn';
    const c = loadProcessConfig();
    expect(c.port).toBe(5555);
    expect(c.logLevel).toBe('warn');
    expect(c.sync.mode).toBe('full'); // not set in the environment: from the file
    expect(process.env['PORT']).toBe('5555');
  });

  it('fills a variable the environment leaves empty from .env (empty is unset to the loader)', () => {
    writeDotenv('PORT=4321\nLOG_LEVEL=debug\n');
    process.env['PORT'] = '';
    process.env['LOG_LEVEL'] = '  ';
    const c = loadProcessConfig();
    expect(c.port).toBe(4321);
    expect(c.logLevel).toBe('debug');
  });

  it('lets explicit overrides win over both the environment and .env', () => {
    writeDotenv('PORT=4321\nLOG_LEVEL=debug\n');
    process.env['LOG_LEVEL'] = 'warn';
    const c = loadProcessConfig({ PORT: '6001', LOG_LEVEL: 'error' });
    expect(c.port).toBe(6001);
    expect(c.logLevel).toBe('error');
  });

  it('skips comments and blank lines, strips inline comments and quotes, keeps # inside quotes', () => {
    writeDotenv(
      [
        '# relay settings',
        '',
        '   # an indented comment',
        '# PORT=1111',
        'PORT=4322 # the listener',
        "HOST='10.0.0.1'",
        'SYNC_CRON="0 */2 * * *"',
        'export SYNC_MODE=incremental',
        'PRICE_MARKUP_FIXED = 0.25',
        'SHOP_WEBHOOK_URL=https://shop.example/hooks/relay',
        'SHOP_WEBHOOK_SECRET="se#cret"',
        "UPSTREAM_SIGNATURE_TEMPLATE='{method}\\n{path}\\n{timestamp}\\n{body_sha256}'",
        '',
      ].join('\r\n'),
    );
    const c = loadProcessConfig();
    expect(c.port).toBe(4322);
    expect(c.host).toBe('10.0.0.1');
    expect(c.sync.cron).toBe('0 */2 * * *');
    expect(c.sync.mode).toBe('incremental');
    expect(c.pricing.markupFixed).toBe('0.25');
    expect(c.shopWebhook).toMatchObject({ url: 'https://shop.example/hooks/relay', secret: 'se#cret' });
    expect(c.upstream.signatureTemplate).toBe('{method}\n{path}\n{timestamp}\n{body_sha256}');
  });

  it('validates values from .env like any other, naming the variable', () => {
    writeDotenv('PORT=eighty\n');
    expect(() => loadProcessConfig()).toThrow(/PORT: must be an integer, got "eighty"/);
  });

  it('reads DATA_DIR from .env for the generated secrets, which it keeps there', () => {
    writeDotenv('DATA_DIR=./state\n');
    const a = loadProcessConfig();
    expect(a.dataDir).toBe('./state');
    expect(a.generated).toEqual(['INTERNAL_API_TOKEN', 'PAYLOAD_ENCRYPTION_KEY']);
    const file = join(dir, 'state', 'dev-secrets.json');
    expect(existsSync(file)).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ INTERNAL_API_TOKEN: a.internalApiToken });
    const b = loadProcessConfig();
    expect(b.internalApiToken).toBe(a.internalApiToken);
    expect(b.payloadKeys[0].equals(a.payloadKeys[0])).toBe(true);
  });

  it('starts without a .env file', () => {
    const c = loadProcessConfig({ INTERNAL_API_TOKEN: 't', PAYLOAD_ENCRYPTION_KEY: KEY });
    expect(c.port).toBe(3000);
    expect(c.sandbox).toBe(true);
    expect(c.generated).toEqual([]);
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });
});
