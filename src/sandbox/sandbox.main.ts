/**
 * Runs the sandbox upstream alone (for shop developers; the `relay sandbox` command calls this).
 * Everything comes from the options (the limiter's variables below from `env`, which the CLI fills
 * with the process's environment). Prints the base URL, the API key and secret, and stops on SIGINT /
 * SIGTERM.
 *
 * The limiter (Dujiao-Next's, see sandbox-rate-limit.ts): without the option `rateLimit` it is set by
 * the environment, else by the profile:
 *   SANDBOX_RATE_LIMIT          `off`, or `<requests>/<window>` with the window in ms, s or m (`60/60s`,
 *                               `20/2s` scaled down for a test). Default: `60/60s` under profile
 *                               `dujiao-next` (Dujiao-Next's own numbers), `off` under `spec`.
 *   SANDBOX_RATE_LIMIT_BLOCK_S  how long the first refused request blocks the key, seconds (a decimal
 *                               number ≥ 0). Default 30.
 * e.g. `SANDBOX_RATE_LIMIT=off relay sandbox --profile dujiao-next`. It can also be changed while the
 * sandbox runs: `POST /__sandbox/rate-limit`.
 */
import { DUJIAO_NEXT_RATE_LIMIT } from './sandbox-config.js';
import { parseRateLimit } from './sandbox-rate-limit.js';
import { SandboxServer } from './sandbox.server.js';
import type { SandboxOptions, SandboxProfile, SandboxRateLimit } from './sandbox.types.js';

export interface RunSandboxOptions extends SandboxOptions {
  /** Default 8787. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Where the banner goes. Default console.log. */
  log?: (line: string) => void;
  /** Stop on SIGINT / SIGTERM. Default true. */
  handleSignals?: boolean;
  /** Where SANDBOX_RATE_LIMIT / SANDBOX_RATE_LIMIT_BLOCK_S are read (the CLI passes the process's). Default: none. */
  env?: Record<string, string | undefined>;
}

/** The limiter of a standalone sandbox: SANDBOX_RATE_LIMIT(_BLOCK_S), else by profile (see the header). */
export function standaloneRateLimit(profile: SandboxProfile, env: Record<string, string | undefined>): SandboxRateLimit | null {
  const rawBlock = env.SANDBOX_RATE_LIMIT_BLOCK_S;
  let blockMs = DUJIAO_NEXT_RATE_LIMIT.blockMs;
  if (rawBlock !== undefined && rawBlock.trim() !== '') {
    const s = Number(rawBlock);
    if (!/^\d+(\.\d+)?$/.test(rawBlock.trim()) || !Number.isFinite(s))
      throw new RangeError(`SANDBOX_RATE_LIMIT_BLOCK_S must be a number of seconds >= 0, got '${rawBlock}'`);
    blockMs = Math.round(s * 1000);
  }
  const raw = env.SANDBOX_RATE_LIMIT;
  if (raw !== undefined && raw.trim() !== '') {
    try {
      return parseRateLimit(raw, blockMs);
    } catch (e) {
      throw new RangeError(`SANDBOX_RATE_LIMIT: ${(e as Error).message}`, { cause: e });
    }
  }
  return profile === 'dujiao-next' ? { ...DUJIAO_NEXT_RATE_LIMIT, blockMs } : null;
}

function describeRateLimit(r: SandboxRateLimit | null): string {
  if (!r) return 'off (SANDBOX_RATE_LIMIT=60/60s to switch it on)';
  return (
    `${r.requests} requests per ${r.windowMs / 1000} s per API key, then blocked ${r.blockMs / 1000} s (HTTP 429; ` +
    `SANDBOX_RATE_LIMIT=off to switch it off)`
  );
}

export interface RunningSandbox {
  sandbox: SandboxServer;
  /** Stops the sandbox (and removes the signal handlers). */
  stop(): Promise<void>;
  /** Resolves once the sandbox has stopped (by stop() or a signal). */
  stopped: Promise<void>;
}

export async function runSandbox(opts: RunSandboxOptions = {}): Promise<RunningSandbox> {
  const { port = 8787, host = '127.0.0.1', log = (line: string) => console.log(line), handleSignals = true, env = {}, ...options } = opts;
  const rateLimit = options.rateLimit !== undefined ? options.rateLimit : standaloneRateLimit(options.profile ?? 'spec', env);
  const sandbox = new SandboxServer({ ...options, rateLimit });
  await sandbox.start(port, host);
  const c = sandbox.config;
  log(`Sandbox upstream (${c.profile} profile) listening`);
  log(`  base URL:          ${sandbox.baseUrl}`);
  log(`  API key:           ${c.apiKey}`);
  log(`  API secret:        ${c.apiSecret}`);
  log(`  headers:           ${c.headerPrefix}-Api-Key, ${c.headerPrefix}-Timestamp, ${c.headerPrefix}-Signature`);
  log(`  signature template: ${c.signatureTemplate.replace(/\n/g, '\\n')}`);
  log(
    `  catalog:           ${sandbox.catalog.productCount} products, ${sandbox.catalog.skuCount} SKUs; wallet ` +
      `${sandbox.walletBalance()} ${c.currency}`,
  );
  log(`  rate limit:        ${describeRateLimit(sandbox.rateLimit)}`);
  log(`  control API:       ${sandbox.url}/__sandbox/state (faults, orders, catalog changes, rate limit; see sandbox.server.ts)`);

  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => {
    resolveStopped = resolve;
  });
  let stopping: Promise<void> | null = null;
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`Sandbox upstream: ${signal}, stopping`);
    void stop();
  };
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (handleSignals) {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      await sandbox.stop();
      resolveStopped();
    })();
    return stopping;
  };
  if (handleSignals) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  return { sandbox, stop, stopped };
}
