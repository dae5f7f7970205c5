/**
 * Structured logs: one JSON object a line (pino), behind Nest's LoggerService so every `Logger`
 * in the code writes through it; the same pino instance is Fastify's logger (request-logging.ts).
 * Lines written with the request at hand carry its `request_id` (request-context.ts). Secrets are redacted by
 * key wherever they appear in a log object (top level or one level down), and header objects are
 * stripped of credentials and signatures. LOG_FORMAT=pretty writes each record as plain text instead
 * (pretty-log.ts). Nest's own start-up lines (each module, each route) are debug, not info: at info
 * the start shows only what a person needs.
 */
import type { LoggerService } from '@nestjs/common';
import pino, { type Logger as Pino } from 'pino';
import type { LogFormat, LogLevel } from '../config/app-config.js';
import { formatPretty } from './pretty-log.js';

export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'api_key',
  'apiKey',
  'api_secret',
  'apiSecret',
  'secret',
  'token',
  'signature',
  'payload',
  'items',
  'delivery_data',
  'delivery_sealed',
  'password',
  'cookie',
  'api_secret',
  'shop_webhook_secret',
  'manual_form_data',
  '*.payload',
  '*.password',
  '*.cookie',
  '*.api_key',
  '*.apiKey',
  '*.api_secret',
  '*.apiSecret',
  '*.manual_form_data',
  '*.items',
  '*.secret',
  '*.token',
  '*.signature',
  '*.delivery_data',
];

/** Header names that carry credentials: never logged. */
const SECRET_HEADER = /authorization|cookie|api-?key|signature|secret|token/i;

/** A copy of a header object without credentials and signatures. */
export function safeHeaders(headers: unknown): unknown {
  if (headers === null || typeof headers !== 'object') return headers;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) out[k] = SECRET_HEADER.test(k) ? '[redacted]' : v;
  return out;
}

/** Where pino's JSON lines go as pretty-log.ts's text (`out`: standard output by default). */
export function prettyDestination(out: { write(text: string): unknown } = process.stdout): pino.DestinationStream {
  return {
    write(line: string) {
      out.write(formatPretty(JSON.parse(line) as Record<string, unknown>));
    },
  };
}

export function createPino(level: LogLevel, destination?: pino.DestinationStream, format: LogFormat = 'json'): Pino {
  if (format === 'pretty') destination = prettyDestination(destination);
  return pino(
    {
      level,
      base: { service: 'upstream-relay' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { headers: safeHeaders },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** Nest's loggers of its own start (modules initialised, routes mapped, started): debug lines. */
const FRAMEWORK_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

export class JsonLogger implements LoggerService {
  constructor(readonly pino: Pino) {}

  private write(level: 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal', message: unknown, params: unknown[]) {
    const context = typeof params[params.length - 1] === 'string' ? (params.pop() as string) : undefined;
    const obj: Record<string, unknown> = context ? { context } : {};
    if (message instanceof Error) {
      obj.err = { message: message.message, stack: message.stack };
      this.pino[level](obj, message.message);
      return;
    }
    if (message !== null && typeof message === 'object') {
      Object.assign(obj, message);
      const msg = typeof obj.msg === 'string' ? obj.msg : '';
      delete obj.msg;
      this.pino[level](obj, msg);
      return;
    }
    if (level === 'error' && typeof params[0] === 'string' && params[0].includes('\n')) obj.stack = params[0];
    this.pino[level](obj, String(message));
  }

  log(message: unknown, ...params: unknown[]) {
    const context = params[params.length - 1];
    this.write(typeof context === 'string' && FRAMEWORK_CONTEXTS.has(context) ? 'debug' : 'info', message, params);
  }
  error(message: unknown, ...params: unknown[]) {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]) {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]) {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]) {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]) {
    this.write('fatal', message, params);
  }
}
