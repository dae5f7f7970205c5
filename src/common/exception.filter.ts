import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requestFields } from '../ops/request-context.js';
import { AppError } from './app-error.js';

const STATUS_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
};

/** Writes every error as `{ ok: false, error_code, error_message, …extra }`. */
@Catch()
export class AppExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const { status, body } = toEnvelope(exception);
    if (status >= 500) this.logger.error({ msg: `unhandled error: ${(exception as Error)?.stack ?? String(exception)}`, ...requestFields(http.getRequest<FastifyRequest>()) });
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}

export function toEnvelope(exception: unknown): { status: number; body: Record<string, unknown> } {
  if (exception instanceof AppError) {
    return {
      status: exception.httpStatus,
      body: { ok: false, error_code: exception.code, error_message: exception.message, ...exception.extra },
    };
  }
  const fastifyStatus = (exception as { statusCode?: number })?.statusCode;
  const status =
    exception instanceof HttpException
      ? exception.getStatus()
      : typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 600
        ? fastifyStatus
        : 500;
  const code = STATUS_CODES[status] ?? (status >= 500 ? 'internal_error' : 'bad_request');
  const message =
    status === 413
      ? 'request body exceeds 64 KiB'
      : status === 400 && isJsonParseError(exception)
        ? 'request body is not valid JSON'
        : status >= 500
          ? 'internal error'
          : ((exception as Error)?.message ?? code);
  return { status, body: { ok: false, error_code: code, error_message: message } };
}

function isJsonParseError(e: unknown): boolean {
  const code = (e as { code?: string })?.code ?? '';
  return code === 'FST_ERR_CTP_INVALID_JSON_BODY' || code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || e instanceof SyntaxError;
}
