/** Production and development entry: `node dist/main.js` (and `npm start`). */
import { ConfigError } from './config/app-config.js';
import { loadProcessConfig } from './config/load-env.js';
import { redactUrl } from './config/redact-url.js';
import { DataDirLockedError } from './database/data-dir-lock.js';
import { createPino, JsonLogger } from './ops/json-logger.js';
import { templateWeaknesses } from './signing/signing.js';

/**
 * `--sandboxes N` (2–9, sandbox mode only): N built-in sandboxes, the 2nd, 3rd… on PORT + 2, PORT + 3…
 * and stored as the suppliers `sandbox-2`… (to try several suppliers without external servers).
 */
function sandboxesFlag(argv: readonly string[]): number {
  const i = argv.findIndex((a) => a === '--sandboxes' || a.startsWith('--sandboxes='));
  if (i < 0) return 1;
  const raw = argv[i].includes('=') ? argv[i].slice(argv[i].indexOf('=') + 1) : argv[i + 1];
  if (raw === undefined || !/^[1-9]$/.test(raw)) throw new ConfigError([`--sandboxes must be a number from 1 to 9, got "${raw ?? ''}"`]);
  return Number(raw);
}

async function main(): Promise<void> {
  let config;
  let sandboxes: number;
  try {
    config = loadProcessConfig();
    sandboxes = sandboxesFlag(process.argv.slice(2));
    if (sandboxes > 1 && !config.sandbox) throw new ConfigError(['--sandboxes is for the built-in sandbox: without UPSTREAM_BASE_URL']);
    if (sandboxes > 1 && config.port + sandboxes > 65535)
      throw new ConfigError([`--sandboxes ${sandboxes}: PORT + ${sandboxes} is over 65535`]);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`upstream-relay: refusing to start, ${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  // The application's modules (Nest, the database, every service) load once the configuration is
  // valid: a refused configuration is reported without loading them.
  await import('reflect-metadata');
  const [{ Logger }, { createRelayApp }, { CALLBACK_ROUTE }, { CONSOLE_PATH }] = await Promise.all([
    import('@nestjs/common'),
    import('./app.factory.js'),
    import('./callbacks/callback-verifier.service.js'),
    import('./console/console-static.js'),
  ]);
  const pino = createPino(config.logLevel, undefined, config.logFormat);
  const logger = new JsonLogger(pino);
  // Lines logged before the Nest application exists (the database's creation, migrations) go through it too.
  Logger.overrideLogger(logger);
  const weaknesses = templateWeaknesses(config.upstream.signatureTemplate);
  if (weaknesses.length) {
    pino.warn({ weaknesses }, `UPSTREAM_SIGNATURE_TEMPLATE signs less than a callback's verification relies on: ${weaknesses.join('; ')}`);
  }
  if (config.generated.length) {
    pino.warn({ generated: config.generated, dir: config.dataDir }, `generated development secrets kept under ${config.dataDir}`);
  }
  const relay = await createRelayApp(config, { logger, pino, sandboxes });
  // The signals are handled before the banner says the service is ready: a supervisor may stop it
  // as soon as it reads that line.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    pino.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    relay
      .close()
      .then(() => process.exit(0))
      .catch((e: unknown) => {
        pino.error({ err: e }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  // The banner: one record that says the service is ready and where everything is (pretty-log.ts
  // prints it as a block). URLs from the environment are logged without credentials or
  // secret-looking parameters. The development token is in it only when the service generated it
  // (sandbox mode, outside production, kept under DATA_DIR): a token the operator set is never logged.
  const base = relay.url.replace('127.0.0.1', 'localhost');
  const devToken = config.sandbox && config.generated.includes('INTERNAL_API_TOKEN') ? config.internalApiToken : undefined;
  pino.info(
    {
      event: 'ready',
      url: relay.url,
      internal_api: `${base}/internal`,
      console: `${base}${CONSOLE_PATH}/`,
      docs: `${base}/docs`,
      callback_endpoint: config.callbacks.publicUrl !== null ? redactUrl(config.callbacks.publicUrl) : `${base}${CALLBACK_ROUTE}`,
      health: `${base}/health`,
      upstream: config.upstream.baseUrl === null ? null : redactUrl(config.upstream.baseUrl),
      ...(relay.sandboxSuppliers.length
        ? { sandbox_suppliers: Object.fromEntries(relay.sandboxSuppliers.map((s, i) => [`sandbox-${i + 2}`, s.baseUrl])) }
        : {}),
      database: relay.endpoint.describe(),
      ...(devToken !== undefined ? { dev_token: devToken } : {}),
    },
    `upstream-relay listening on ${base}`,
  );

  // The embedded database's worker ended on its own: nothing can be stored or read any more, and
  // /health/live would still answer. Exit, so that the supervisor (Docker, systemd) starts it again.
  relay.endpoint.onEmbeddedEnded((code) => {
    pino.fatal({ exit_code: code }, 'the embedded database ended unexpectedly: exiting so that the service is restarted');
    process.exit(1);
  });
}

main().catch((e: unknown) => {
  if (e instanceof DataDirLockedError) {
    process.stderr.write(
      `upstream-relay: refusing to start, ${e.message}; stop that process first, or give this one another DATA_DIR or DATABASE_URL\n`,
    );
    process.exit(1);
  }
  process.stderr.write(`upstream-relay: failed to start: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
