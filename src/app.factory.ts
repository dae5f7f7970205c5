/**
 * Builds and starts the service: the database (embedded or server, migrated), the in-process
 * sandbox when no upstream is configured, then the Nest application on Fastify with its body
 * parsing (JSON only; a callback's raw bytes kept for its verification, whatever its content type).
 * Used by `main.ts`, the CLI and the end-to-end tests alike.
 */
import type { IncomingMessage } from 'node:http';
import type { LoggerService, RawBodyRequest } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger as Pino } from 'pino';
import { AppModule } from './app.module.js';
import { CALLBACK_ROUTE } from './callbacks/callback-verifier.service.js';
import type { Clock } from './common/clock.js';
import { AppError, badRequest } from './common/app-error.js';
import { notJsonBody, sendError } from './common/exception.filter.js';
import { createValidationPipe, storableText } from './common/validation.js';
import type { AppConfig } from './config/app-config.js';
import { DatabaseEndpoint } from './database/database-endpoint.js';
import { setupApiDocs } from './ops/api-docs.js';
import { HealthService } from './ops/health.service.js';
import { createPino } from './ops/json-logger.js';
import { installRequestLogging, REQUEST_ID_HEADER, requestIdFrom } from './ops/request-logging.js';
import { trackRoutes, type RegisteredRoute } from './ops/route-registry.js';
import { SandboxServer } from './sandbox/sandbox.server.js';
import { SupplierService } from './suppliers/supplier.service.js';

/** Request bodies over this are refused with 413 `payload_too_large` (CONTRACT §5, §6). */
export const BODY_LIMIT_BYTES = 64 * 1024;

export interface RelayApp {
  app: NestFastifyApplication;
  config: AppConfig;
  /** http://host:port of the listener. */
  url: string;
  /** The in-process sandbox upstream, when the config has no upstream. */
  sandbox: SandboxServer | null;
  /** The built-in sandboxes of the stored suppliers `sandbox-2`, `sandbox-3`… (`sandboxSuppliers`), in that order. */
  sandboxSuppliers: SandboxServer[];
  endpoint: DatabaseEndpoint;
  /** Every route the HTTP server registered (method, Fastify path). */
  routes: RegisteredRoute[];
  close(): Promise<void>;
}

export interface CreateRelayAppOptions {
  logger?: LoggerService | false;
  /**
   * The pino instance of the HTTP layer (one log line per request). Default: a new one at
   * LOG_LEVEL in LOG_FORMAT on stdout, or a silent one when `logger` is false.
   */
  pino?: Pino;
  clock?: Clock;
  /** Port of the in-process sandbox (default: PORT + 1, or any free port when PORT is 0). */
  sandboxPort?: number;
  /** A database endpoint already opened by the caller (tests share one between instances). */
  endpoint?: DatabaseEndpoint;
  /**
   * In sandbox mode, how many built-in sandboxes in all (default 1): the 2nd, 3rd… run on PORT + 2,
   * PORT + 3… (any free port when PORT is 0), each with its own key, secret and catalog seed, stored
   * as the suppliers `sandbox-2`, `sandbox-3`… (`main.ts --sandboxes N`: trying several suppliers
   * without external servers).
   */
  sandboxes?: number;
}

export async function createRelayApp(config: AppConfig, options: CreateRelayAppOptions = {}): Promise<RelayApp> {
  // The database first: a data directory held by another process is refused before a port is taken.
  const ownEndpoint = options.endpoint === undefined;
  const endpoint = options.endpoint ?? (await DatabaseEndpoint.open(config.database, config.migrateOnStart));
  let sandbox: SandboxServer | null = null;
  if (config.sandbox) {
    sandbox = new SandboxServer({
      profile: config.upstream.profile,
      headerPrefix: config.upstream.headerPrefix,
      signatureTemplate: config.upstream.signatureTemplate,
      apiKey: config.upstream.apiKey,
      apiSecret: config.upstream.apiSecret,
      allowPrivateCallbackUrls: true,
    });
    await sandbox.start(options.sandboxPort ?? (config.port === 0 ? 0 : config.port + 1), '127.0.0.1').catch(async (e: unknown) => {
      if (ownEndpoint) await endpoint.close().catch(() => undefined);
      throw e;
    });
    config.upstream.baseUrl = sandbox.baseUrl;
  }
  const sandboxSuppliers: SandboxServer[] = [];
  const stopSandboxes = async () => {
    await sandbox?.stop().catch(() => undefined);
    for (const s of sandboxSuppliers) await s.stop().catch(() => undefined);
  };
  if (config.sandbox) {
    try {
      for (let n = 2; n <= (options.sandboxes ?? 1); n++) {
        const extra = new SandboxServer({ ...sandboxSupplierCredentials(n), catalog: { seed: n }, allowPrivateCallbackUrls: true });
        await extra.start(config.port === 0 ? 0 : config.port + n, '127.0.0.1');
        sandboxSuppliers.push(extra);
      }
    } catch (e) {
      await stopSandboxes();
      if (ownEndpoint) await endpoint.close().catch(() => undefined);
      throw e;
    }
  }

  let created: NestFastifyApplication | null = null;
  try {
    const log = options.pino ?? createPino(options.logger === false ? 'silent' : config.logLevel, undefined, config.logFormat);
    const adapter = new FastifyAdapter({
      bodyLimit: BODY_LIMIT_BYTES,
      trustProxy: true,
      // Fastify's own lines ("Server listening at …") repeat main's; requests are logged by request-logging.
      loggerInstance: log.child({}, { level: log.isLevelEnabled('warn') ? 'warn' : log.level }),
      logController: new LogController({ disableRequestLogging: true }),
      requestIdHeader: false,
      genReqId: (req: IncomingMessage) => requestIdFrom(req.headers[REQUEST_ID_HEADER]),
      // path parameters: sku_codes run to 255 characters (and the upstream sets no limit)
      routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
      // the router's own refusals (a malformed percent-escape, a parameter over MAX_PARAM_LENGTH) in the
      // envelope, 401 first on an internal path without the token
      frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
        sendError(routerRefusal(error), request, reply, config.internalApiToken);
      },
    });
    const routes = trackRoutes(adapter.getInstance());
    installRequestLogging(adapter.getInstance(), log);
    const drain = installDrain(adapter.getInstance());
    installBodyParsing(adapter.getInstance());
    const app = await NestFactory.create<NestFastifyApplication>(
      AppModule.register({ config, endpoint, clock: options.clock }),
      adapter,
      // (the body parsers are ours: installBodyParsing)
      { bodyParser: false, logger: options.logger ?? undefined, bufferLogs: false },
    );
    created = app;
    for (const [i, extra] of sandboxSuppliers.entries()) {
      await app.get(SupplierService).storeBuiltIn({
        name: `sandbox-${i + 2}`,
        baseUrl: extra.baseUrl,
        ...sandboxSupplierCredentials(i + 2),
        profile: 'spec',
        enabled: true,
        settings: {},
      });
    }
    app.useGlobalPipes(createValidationPipe());
    setupApiDocs(app);
    await app.listen(config.port, config.host);
    const address = app.getHttpServer().address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = `http://${host}:${port}`;
    return {
      app,
      config,
      url,
      sandbox,
      sandboxSuppliers,
      endpoint,
      routes,
      async close() {
        // Stop taking requests at once (503, and not ready) and let the work in flight finish: the
        // requests being answered, then each module's own (Nest's destroy hooks), then the HTTP
        // server, the upstream client's sockets and the pool (closed by TypeORM with the app), then
        // the embedded server, then the sandbox.
        drain.begin();
        app.get(HealthService).beginShutdown();
        await app.close();
        if (ownEndpoint) await endpoint.close();
        await sandbox?.stop();
        for (const extra of sandboxSuppliers) await extra.stop();
      },
    };
  } catch (e) {
    // A start that failed after the modules came up (e.g. the port is taken): their background work
    // is stopped and its claims given back before the database closes, not left to the process's exit.
    await created?.close().catch(() => undefined);
    if (ownEndpoint) await endpoint.close().catch(() => undefined);
    await stopSandboxes();
    throw e;
  }
}

/** The key and secret of the built-in sandbox supplier `sandbox-<n>` (development values, like the first sandbox's). */
export const sandboxSupplierCredentials = (n: number) => ({ apiKey: `sandbox-${n}-api-key`, apiSecret: `sandbox-${n}-api-secret` });

/** The routes a drain still serves: health (it says so itself) and the callbacks' inbox. */
const DRAIN_PASSES = ['/health', CALLBACK_ROUTE];

/**
 * Requests that arrive once the shutdown began (RelayApp.close) are refused with 503
 * `service_unavailable` and `Connection: close` (a load balancer or the shop tries another replica),
 * except the health routes, which say so themselves (`/health/ready` 503, `shutting_down: true`), and
 * the upstream's callbacks, which are still verified and stored in the inbox while the database is
 * open (and applied after the restart: the processor has stopped). Nest's HTTP server closes only after every module's
 * destroy hook: without this, new orders were still taken while the instance drained.
 */
function installDrain(fastify: FastifyInstance): { begin(): void } {
  // (a callback is only verified and stored during the drain, 200 once stored: CONTRACT §6 allows a 5xx
  // only when it could not be stored, and an upstream that retries 5 times may be on its last try)
  let draining = false;
  fastify.addHook('onRequest', (request, reply, done) => {
    // (by the route the request matched, as the body parsing tells a callback: no path text to parse)
    const route = request.routeOptions.url;
    if (!draining || (route !== undefined && DRAIN_PASSES.some((path) => route === path || route.startsWith(`${path}/`)))) return done();
    reply.code(503).header('connection', 'close').send({
      ok: false,
      error_code: 'service_unavailable',
      error_message: 'the service is shutting down: try another replica or again shortly',
    });
  });
  return {
    begin() {
      draining = true;
    },
  };
}

/** The content type a callback's or an unknown route's body is read under, whatever it was sent with. */
const RAW_BODY_TYPE = 'application/octet-stream';

/** Longest path parameter the router takes (Fastify's default is 100). */
const MAX_PARAM_LENGTH = 1024;

/** The router's refusal of a path as the contract's `bad_request` (any other error as it is). */
function routerRefusal(error: FastifyError): unknown {
  if (error.code === 'FST_ERR_BAD_URL')
    return badRequest('invalid request: path', { path: ['not a valid URL path (a malformed percent-escape)'] });
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH')
    return badRequest('invalid request: path', { path: [`a path segment is longer than ${MAX_PARAM_LENGTH} characters`] });
  return error;
}

/** Where a parsed JSON value holds a NUL character (a key or a string), as a field path; null when nowhere. */
function nulAt(value: unknown, path: string): string | null {
  if (typeof value === 'string') return storableText(value) ? null : path || 'body';
  if (typeof value !== 'object' || value === null) return null;
  for (const [k, v] of Object.entries(value)) {
    const here = path ? `${path}.${k}` : k;
    if (!storableText(k)) return here;
    const inner = nulAt(v, here);
    if (inner !== null) return inner;
  }
  return null;
}

/** A text with a NUL character is refused wherever it is: no field of ours can hold one (PostgreSQL's text cannot). */
const nulRefused = (at: string): AppError => badRequest(`invalid request: ${at}`, { [at]: ['must not contain a NUL character (\\u0000)'] });

/**
 * Request bodies (CONTRACT §5, §6), read whatever their content type up to BODY_LIMIT_BYTES (413
 * `payload_too_large` beyond, before anything else is decided), then:
 * - `POST /callbacks/upstream` and `POST /callbacks/upstream/{supplier}`: kept as raw bytes
 *   (`rawBody`), not parsed: the callback is verified on them before anything else (an unsigned one is
 *   401 whatever it carries), and read once verified;
 * - a route that does not exist: not parsed (its answer is 404, or 401 on an internal path);
 * - any other: `application/json` (parameters aside) is parsed as JSON, prototype poisoning refused;
 *   any other content type, none, or JSON that does not parse is 400 `bad_request` with `fields.body`;
 *   JSON with a NUL character anywhere, key or string, is 400 naming where (`nulAt`), whatever route
 *   it is for. A body of no bytes under another content type (or none) is no body at all.
 */
function installBodyParsing(fastify: FastifyInstance): void {
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  // the bare route (the `UPSTREAM_*` supplier's) and each supplier's own, `/callbacks/upstream/{supplier}`
  const callbackRoutes = new Set([CALLBACK_ROUTE, `${CALLBACK_ROUTE}/:supplier`]);
  const isCallback = (req: FastifyRequest) => req.method === 'POST' && callbackRoutes.has(req.routeOptions.url ?? '');
  // A content-type header Fastify cannot read is refused (415) before the body is: not these ones'.
  fastify.addHook('onRequest', (req, _reply, done) => {
    // (Fastify lays an assigned object over the raw headers: only the content type is replaced)
    if ((isCallback(req) || req.is404) && req.headers['content-type'] !== undefined) req.headers = { 'content-type': RAW_BODY_TYPE };
    done();
  });
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    const raw = body as Buffer;
    (req as RawBodyRequest<FastifyRequest>).rawBody = raw;
    if (isCallback(req) || req.is404) return done(null, undefined);
    const header = req.headers['content-type'];
    const type = header?.split(';')[0].trim().toLowerCase();
    if (type === 'application/json') {
      const text = raw.toString('utf8');
      // JSON can carry a NUL only as the escape \u0000: checked only when the text has one
      if (!text.includes('\\u0000')) return parseJson(req, text, done);
      return parseJson(req, text, (err: Error | null, value?: unknown) => {
        const at = err ? null : nulAt(value, '');
        done(at === null ? err : nulRefused(at), at === null ? value : undefined);
      });
    }
    if (raw.length === 0) return done(null, undefined);
    done(notJsonBody(type === undefined ? 'not JSON (no content-type)' : 'not JSON (content-type is not application/json)'), undefined);
  });
}
