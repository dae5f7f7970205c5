import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppConfig } from '../config/app-config.js';
import { requestFields } from '../ops/request-context.js';
import { AppError } from './app-error.js';
import { unauthorized, internalRequestNeedsToken } from './internal-auth.guard.js';

const STATUS_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  429: 'too_many_requests',
};

/**
 * 400 `bad_request` for a body that is not JSON (CONTRACT §5): not `application/json`, or not
 * parseable as JSON. `fields.body` says what was wrong, as validation errors name their fields.
 */
export function notJsonBody(why: string): AppError {
  return new AppError('bad_request', `request body is ${why}`, { fields: { body: [why] } });
}

/**
 * Writes every error as `{ ok: false, error_code, error_message, …extra }`. A request that matched no
 * route and names an internal path is answered 401 `unauthorized` without the bearer token (the
 * guard never runs for it), and 404 `not_found` with it.
 */
@Catch()
export class AppExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  constructor(private readonly config: AppConfig) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const req = http.getRequest<FastifyRequest>();
    const status = sendError(exception, req, reply, this.config.internalApiToken);
    if (status >= 500)
      this.logger.error({ msg: `unhandled error: ${(exception as Error)?.stack ?? String(exception)}`, ...requestFields(req) });
  }
}

/**
 * Answers `exception` in the envelope, 401 `unauthorized` instead on an internal path without the
 * token (a body over the limit stays 413, as on a known route): for the filter, and for the router's
 * own refusals, which never reach it. Returns the status sent.
 */
export function sendError(exception: unknown, req: FastifyRequest | undefined, reply: FastifyReply, token: string): number {
  let { status, body } = toEnvelope(exception);
  if (status < 500 && status !== 413 && req && internalRequestNeedsToken(req, token)) ({ status, body } = toEnvelope(unauthorized()));
  void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  return status;
}

export function toEnvelope(exception: unknown): { status: number; body: Record<string, unknown> } {
  if (exception instanceof AppError) {
    return {
      status: exception.httpStatus,
      body: { ok: false, error_code: exception.code, error_message: exception.message, ...exception.extra },
    };
  }
  const notJson = bodyParseError(exception);
  if (notJson) return toEnvelope(notJsonBody(notJson));
  const fastifyStatus = (exception as { statusCode?: number })?.statusCode;
  const status =
    exception instanceof HttpException
      ? exception.getStatus()
      : typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 600
        ? fastifyStatus
        : 500;
  const code = STATUS_CODES[status] ?? (status >= 500 ? 'internal_error' : 'bad_request');
  const message =
    status === 413 ? 'request body exceeds 64 KiB' : status >= 500 ? 'internal error' : ((exception as Error)?.message ?? code);
  const body: Record<string, unknown> = { ok: false, error_code: code, error_message: message };
  // every bad_request names what was wrong (CONTRACT §5); one of the framework's own names the request
  if (code === 'bad_request') body.fields = { request: [message] };
  return { status, body };
}

/**
 * What is wrong with a body that could not be read as JSON, or null for any other error. (Fastify's
 * errors reach the filter wrapped in an HttpException, the original as its `cause`.)
 */
function bodyParseError(exception: unknown): string | null {
  const e = exception instanceof HttpException && exception.cause !== undefined ? exception.cause : exception;
  const { code, statusCode } = (e ?? {}) as { code?: string; statusCode?: number };
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return 'empty (a JSON body was declared)';
  if (code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (e instanceof SyntaxError && statusCode === 400)) return 'not valid JSON';
  // a Content-Type header that cannot be read at all (a readable one other than JSON is refused by the body parser)
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || statusCode === 415) return 'not JSON (unreadable content-type)';
  return null;
}
