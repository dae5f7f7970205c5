/**
 * Runs the sandbox upstream alone (for shop developers; the `relay sandbox` command calls this).
 * Env-free: everything comes from the options. Prints the base URL, the API key and secret, and stops
 * on SIGINT / SIGTERM.
 */
import { SandboxServer } from './sandbox.server.js';
import type { SandboxOptions } from './sandbox.types.js';

export interface RunSandboxOptions extends SandboxOptions {
  /** Default 8787. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Where the banner goes. Default console.log. */
  log?: (line: string) => void;
  /** Stop on SIGINT / SIGTERM. Default true. */
  handleSignals?: boolean;
}

export interface RunningSandbox {
  sandbox: SandboxServer;
  /** Stops the sandbox (and removes the signal handlers). */
  stop(): Promise<void>;
  /** Resolves once the sandbox has stopped (by stop() or a signal). */
  stopped: Promise<void>;
}

export async function runSandbox(opts: RunSandboxOptions = {}): Promise<RunningSandbox> {
  const { port = 8787, host = '127.0.0.1', log = (line: string) => console.log(line), handleSignals = true, ...options } = opts;
  const sandbox = new SandboxServer(options);
  await sandbox.start(port, host);
  const c = sandbox.config;
  log(`Sandbox upstream (${c.profile} profile) listening`);
  log(`  base URL:          ${sandbox.baseUrl}`);
  log(`  API key:           ${c.apiKey}`);
  log(`  API secret:        ${c.apiSecret}`);
  log(`  headers:           ${c.headerPrefix}-Api-Key, ${c.headerPrefix}-Timestamp, ${c.headerPrefix}-Signature`);
  log(`  signature template: ${c.signatureTemplate.replace(/\n/g, '\\n')}`);
  log(`  catalog:           ${sandbox.catalog.productCount} products, ${sandbox.catalog.skuCount} SKUs; wallet ${sandbox.walletBalance()} ${c.currency}`);
  log(`  control API:       ${sandbox.url}/__sandbox/state (faults, orders, catalog changes; see sandbox.server.ts)`);

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
