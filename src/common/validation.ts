import { ValidationPipe, type ValidationError } from '@nestjs/common';
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
