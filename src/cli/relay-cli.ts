/**
 * The `relay` command (CONTRACT §8), with the same configuration as the service:
 *   relay sync [--mode full|incremental] [--supplier NAME]   one catalog sync, with progress
 *   relay suppliers                        the suppliers: name, base URL, enabled, health
 *   relay wallet                           the upstream wallet (ping)
 *   relay order <shop_order_no>            one order, as the internal API returns it
 *   relay sandbox [--port N] [--products N] [--seed N] [--profile spec|dujiao-next] [--api-key K] [--api-secret S]
 *   relay migrate [--down N]               apply pending migrations (or revert the latest N)
 * `sync`, `suppliers`, `wallet` and `order` run an instance of the service in this process (no background work)
 * and use its internal API; with `--url URL` (or RELAY_URL) they use a running service instead
 * (needed when the embedded database is held by a running service).
 * Exit codes: 0 done, 1 failed, 2 usage, 3 configuration, 4 not found. An embedded database held by
 * another process (the running service) is refused before anything is written (`data_dir_locked`,
 * exit 3: the command is pointed at a database it cannot open; --url, or stopping the holder, is the fix).
 */
import 'reflect-metadata';
import axios, { type AxiosInstance } from 'axios';
import { ConfigError, type AppConfig } from '../config/app-config.js';
import { loadProcessConfig, processEnvironment } from '../config/load-env.js';
import { redactUrl } from '../config/redact-url.js';
import { DataDirLockedError } from '../database/data-dir-lock.js';
import { DatabaseEndpoint } from '../database/database-endpoint.js';
import { migrateDown, migrateUp } from '../database/migrator.js';
import { SUPPLIER_NAME_PATTERN } from '../suppliers/supplier.types.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, config: 3, notFound: 4 } as const;

const USAGE = `usage: relay <command> [options]
  sync [--mode full|incremental] [--supplier NAME] [--url URL]
                                               run one catalog sync (of that supplier) and show its progress
  suppliers [--url URL]                        list the suppliers: name, base URL, enabled, health
  wallet [--url URL]                           show the upstream wallet
  order <shop_order_no> [--url URL]            show one order
  sandbox [--port N] [--products N] [--seed N] [--profile spec|dujiao-next] [--api-key K] [--api-secret S]
                                               run the sandbox upstream alone (another one for
                                               trying several suppliers: another port, seed and key)
  migrate [--down N]                           apply pending migrations (or revert the latest N)`;

interface Args {
  command: string | undefined;
  positional: string[];
  /** `--k v` and `--k=v` as given; an option given without a value is `'true'` (and named in `bare`). */
  flags: Record<string, string>;
  bare: Set<string>;
}

/**
 * `--k v`, `--k=v` (the value is everything after the first `=`), or a bare `--k`; after `--`, every
 * argument is positional (an order number may start with `--`).
 */
export function parseArgs(argv: string[]): Args {
  const flags: Record<string, string> = {};
  const bare = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const k = a.slice(2, eq < 0 ? undefined : eq);
      bare.delete(k);
      if (eq >= 0) flags[k] = a.slice(eq + 1);
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) flags[k] = argv[++i];
      else {
        flags[k] = 'true';
        bare.add(k);
      }
    } else positional.push(a);
  }
  return { command: positional.shift(), positional, flags, bare };
}

/** Options that may be given without a value. */
const BARE_OPTIONS = new Set(['help', 'down']);

class UsageError extends Error {}

/**
 * Each command's options and how many positional arguments it takes: a misspelt option (`migrate
 * --dwon 1`) or a stray argument is a usage error (exit 2), never a different action.
 */
const COMMAND_ARGS: Record<string, { options: string[]; positional: number }> = {
  sync: { options: ['mode', 'supplier', 'url'], positional: 0 },
  suppliers: { options: ['url'], positional: 0 },
  wallet: { options: ['url'], positional: 0 },
  order: { options: ['url'], positional: 1 },
  migrate: { options: ['down'], positional: 0 },
  sandbox: { options: ['port', 'products', 'seed', 'profile', 'host', 'api-key', 'api-secret'], positional: 0 },
};

function checkArgs(args: Args): void {
  const allowed = COMMAND_ARGS[args.command ?? ''];
  for (const [k, v] of Object.entries(args.flags)) {
    if (k !== 'help' && !allowed.options.includes(k)) throw new UsageError(`unknown option --${k} for relay ${args.command}`);
    if (!BARE_OPTIONS.has(k) && (args.bare.has(k) || v === '')) throw new UsageError(`option --${k} needs a value`);
  }
  const url = args.flags.url;
  if (url !== undefined && !/^https?:\/\/[^/]/i.test(url))
    throw new UsageError(`--url must be an http(s) URL of a running relay, got "${redactUrl(url)}"`);
  if (args.positional.length > allowed.positional)
    throw new UsageError(`unexpected argument ${args.positional[allowed.positional]} for relay ${args.command}`);
}

function intFlag(flags: Record<string, string>, name: string, def: number): number {
  const v = flags[name];
  if (v === undefined) return def;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`);
  return Number(v);
}

interface Api {
  http: AxiosInstance;
  close(): Promise<void>;
}

/** The internal API of a running service (--url) or of an instance started in this process. */
async function openApi(config: AppConfig, url: string | undefined): Promise<Api> {
  if (url) {
    const http = axios.create({
      baseURL: url.replace(/\/+$/, ''),
      headers: { authorization: `Bearer ${config.internalApiToken}` },
      validateStatus: () => true,
    });
    return { http, close: async () => undefined };
  }
  const { createRelayApp } = await import('../app.factory.js');
  config.workers = false;
  config.sync.onStart = false;
  config.sync.cron = null;
  config.port = 0;
  config.host = '127.0.0.1';
  const relay = await createRelayApp(config, { logger: false, sandboxPort: 0 });
  const http = axios.create({
    baseURL: relay.url,
    headers: { authorization: `Bearer ${config.internalApiToken}` },
    validateStatus: () => true,
  });
  return { http, close: () => relay.close() };
}

type Out = (line: string) => void;

function fail(out: Out, body: { error_code?: string; error_message?: string }, status: number): number {
  out(`error: ${body?.error_code ?? `http_${status}`}: ${body?.error_message ?? ''}`.trim());
  return status === 404 ? EXIT.notFound : EXIT.failed;
}

function bar(done: number, total: number, width = 30): string {
  const f = total > 0 ? Math.min(1, done / total) : 0;
  const n = Math.round(f * width);
  return `[${'#'.repeat(n)}${'.'.repeat(width - n)}]`;
}

async function sync(
  api: Api,
  mode: string | undefined,
  supplier: string | undefined,
  out: Out,
  progress: (s: string) => void,
): Promise<number> {
  const start = await api.http.post('/internal/catalog/sync', { ...(mode ? { mode } : {}), ...(supplier ? { supplier } : {}) });
  if (start.status !== 202 && start.status !== 409) return fail(out, start.data, start.status);
  const runId = String(start.data.run_id);
  if (start.status === 409) out(`a sync is already running (${runId}); following it`);
  for (;;) {
    const r = await api.http.get(`/internal/catalog/sync-runs/${encodeURIComponent(runId)}`);
    if (r.status !== 200) return fail(out, r.data, r.status);
    const run = r.data.run;
    const total = Number(run.pages_total ?? 0);
    const done = Number(run.pages_done ?? 0);
    progress(
      `sync ${runId} ${bar(done, total)} pages ${done}/${total || '?'}  products ${run.products_seen ?? 0}  SKUs ${run.skus_seen ?? 0}`,
    );
    if (run.status !== 'running') {
      progress('');
      out(
        `sync ${run.status}: mode ${run.mode}, pages ${done}/${total}, products ${run.products_seen}, ` +
          `created ${run.skus_created}, changed ${run.skus_changed}, delisted ${run.skus_delisted}, relisted ${run.skus_relisted}` +
          (run.error ? `\nerror: ${run.error}` : ''),
      );
      return run.status === 'succeeded' ? EXIT.ok : EXIT.failed;
    }
    await new Promise((res) => setTimeout(res, 250));
  }
}

interface SupplierRow {
  name: string;
  base_url: string;
  enabled: boolean;
  health?: { upstream?: string | null };
  last_sync?: { status?: string; finished_at?: string | null } | null;
}

/** One line a supplier, in columns: name, base URL, enabled, health, last sync. */
async function suppliers(api: Api, out: Out): Promise<number> {
  const r = await api.http.get('/internal/suppliers', { params: { page_size: 500 } });
  if (r.status !== 200) return fail(out, r.data, r.status);
  const rows = (r.data.items as SupplierRow[]).map((s) => [
    s.name,
    s.base_url,
    s.enabled ? 'enabled' : 'disabled',
    s.health?.upstream ?? 'unknown',
    s.last_sync ? `${s.last_sync.status} ${s.last_sync.finished_at ?? ''}`.trim() : 'never synced',
  ]);
  const table = [['NAME', 'BASE URL', 'ENABLED', 'HEALTH', 'LAST SYNC'], ...rows];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table)
    out(
      row
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    );
  return EXIT.ok;
}

export interface CliOptions {
  out?: Out;
  /** Extra environment over the process's (tests). */
  env?: Record<string, string>;
}

export async function runCli(argv: string[], options: CliOptions = {}): Promise<number> {
  const out: Out = options.out ?? ((l) => process.stdout.write(`${l}\n`));
  const args = parseArgs(argv);
  const progress = (s: string) => {
    if (process.stdout.isTTY) process.stdout.write(`\r\x1b[K${s}`);
    else if (s) out(s);
  };
  try {
    if (args.command !== undefined && !Object.hasOwn(COMMAND_ARGS, args.command)) throw new UsageError(`unknown command: ${args.command}`);
    if (!args.command || args.flags.help) {
      out(USAGE);
      return args.command || args.flags.help ? EXIT.ok : EXIT.usage;
    }
    checkArgs(args);
    if (args.command === 'sandbox') {
      const { runSandbox } = await import('../sandbox/sandbox.main.js');
      const profile = args.flags.profile ?? 'spec';
      if (profile !== 'spec' && profile !== 'dujiao-next') throw new UsageError('--profile must be spec or dujiao-next');
      const running = await runSandbox({
        port: intFlag(args.flags, 'port', 8787),
        host: args.flags.host ?? '127.0.0.1',
        profile,
        catalog: { products: intFlag(args.flags, 'products', 40), seed: intFlag(args.flags, 'seed', 1) },
        ...(args.flags['api-key'] !== undefined ? { apiKey: args.flags['api-key'] } : {}),
        ...(args.flags['api-secret'] !== undefined ? { apiSecret: args.flags['api-secret'] } : {}),
        log: out,
        env: processEnvironment(options.env),
      });
      await running.stopped;
      return EXIT.ok;
    }

    if (args.command === 'order' && !args.positional[0]) throw new UsageError('relay order needs a shop_order_no');
    const mode = args.flags.mode;
    if (mode !== undefined && mode !== 'full' && mode !== 'incremental') throw new UsageError('--mode must be full or incremental');
    const supplier = args.flags.supplier;
    if (supplier !== undefined && !SUPPLIER_NAME_PATTERN.test(supplier))
      throw new UsageError('--supplier must be a supplier name ([a-z][a-z0-9-]{0,31})');

    const config = loadProcessConfig(options.env);
    if (args.command === 'migrate') {
      // (checked before the database is opened)
      const down = args.flags.down === undefined ? null : args.flags.down === 'true' ? 1 : intFlag(args.flags, 'down', 1);
      const endpoint = await DatabaseEndpoint.open(config.database, false, { shortLived: true });
      try {
        if (down !== null) {
          const reverted = await migrateDown(endpoint.url, down);
          out(reverted.length ? `reverted: ${reverted.join(', ')}` : 'nothing to revert');
        } else {
          const report = await migrateUp(endpoint.url);
          out(report.applied.length ? `applied: ${report.applied.join(', ')}` : `up to date (${report.alreadyApplied} applied)`);
        }
      } finally {
        await endpoint.close();
      }
      return EXIT.ok;
    }

    const url = args.flags.url ?? processEnvironment(options.env).RELAY_URL;
    const api = await openApi(config, url);
    try {
      if (args.command === 'sync') return await sync(api, mode, supplier, out, progress);
      if (args.command === 'suppliers') return await suppliers(api, out);
      const path = args.command === 'wallet' ? '/internal/wallet' : `/internal/orders/${encodeURIComponent(args.positional[0])}`;
      const r = await api.http.get(path);
      if (r.status !== 200) return fail(out, r.data, r.status);
      out(JSON.stringify(args.command === 'wallet' ? r.data : r.data.order, null, 2));
      return EXIT.ok;
    } finally {
      await api.close();
    }
  } catch (e) {
    if (e instanceof UsageError) {
      out(`relay: ${e.message}\n${USAGE}`);
      return EXIT.usage;
    }
    if (e instanceof ConfigError) {
      out(`relay: ${e.message}`);
      return EXIT.config;
    }
    if (e instanceof DataDirLockedError) {
      out(`relay: ${e.message}`);
      out(
        args.command === 'migrate'
          ? `relay: stop that process first, then run relay migrate again (or let the service apply pending migrations ` +
              `when it starts: DB_MIGRATE_ON_START).`
          : `relay: run the command against the running service instead: relay ${args.command} … --url http://HOST:PORT ` +
              `(or RELAY_URL); or stop that process first.`,
      );
      return EXIT.config;
    }
    out(`relay: ${(e as Error)?.message ?? String(e)}`);
    return EXIT.failed;
  }
}
