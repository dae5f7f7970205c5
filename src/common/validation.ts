import { ValidationPipe, type PipeTransform, type ValidationError } from '@nestjs/common';
import { AppError } from './app-error.js';

function collect(errors: ValidationError[], prefix = '', out: Record<string, string[]> = {}): Record<string, string[]> {
  for (const e of errors) {
    const key = prefix ? `${prefix}.${e.property}` : e.property;
    if (e.constraints) out[key] = Object.values(e.constraints);
    if (e.children?.length) collect(e.children, key, out);
  }
  return out;
}

/** Body and query validation with class-validator; failures are 400 `bad_request` with `fields`. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    exceptionFactory: (errors) => {
      const fields = collect(errors);
      return new AppError('bad_request', 400, `invalid request: ${Object.keys(fields).join(', ')}`, { fields });
    },
  });
}

/**
 * The largest id taken in a request: ids are JavaScript numbers in the code (and bigint in the
 * database), so an id beyond Number.MAX_SAFE_INTEGER would not even be read exactly (and one beyond
 * bigint was a 500).
 */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/**
 * A path key (`@Param(name, pathKey(…))`) that no record can have is that route's 404 at once: what
 * `accepts` refuses is never looked up (a NUL byte, which PostgreSQL's text cannot hold, was a 500).
 */
export function pathKey(accepts: (key: string) => boolean, notFound: (key: string) => AppError): PipeTransform<string, string> {
  return {
    transform(key: string): string {
      if (!accepts(key)) throw notFound(JSON.stringify(key).slice(1, -1));
      return key;
    },
  };
}

/** Any text PostgreSQL can hold (no NUL), for keys without a format of their own. */
export const storableText = (key: string): boolean => !key.includes('\u0000');
