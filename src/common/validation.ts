import { ValidationPipe, type ArgumentMetadata, type PipeTransform, type ValidationError } from '@nestjs/common';
import { registerDecorator, type ValidationArguments } from 'class-validator';
import { AppError } from './app-error.js';

/** A property decorator checking the property against another one of the body (`test` gets that one's value). */
function withOther(name: string, other: string, message: string, test: (otherValue: unknown) => boolean): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: propertyName as string,
      constraints: [other],
      options: { message },
      validator: { validate: (_value: unknown, args?: ValidationArguments) => test((args?.object as Record<string, unknown>)[other]) },
    });
}

/** Only together with `other` (given: neither undefined nor null). */
export const OnlyWith = (other: string, message: string): PropertyDecorator => withOther('onlyWith', other, message, (v) => v != null);

/** Refused when `other` is given too (present in the body, whatever its value). */
export const NotWith = (other: string, message: string): PropertyDecorator => withOther('notWith', other, message, (v) => v === undefined);

function collect(errors: ValidationError[], prefix = '', out: Record<string, string[]> = {}): Record<string, string[]> {
  for (const e of errors) {
    const key = prefix ? `${prefix}.${e.property}` : e.property;
    if (e.constraints) out[key] = Object.values(e.constraints);
    if (e.children?.length) collect(e.children, key, out);
  }
  return out;
}

/**
 * A DTO class whose usual body is taken without class-validator: `fastAccept` gives the DTO built from
 * a body, or null for any other body (which the pipe then validates in full and words any refusal).
 * It must accept only bodies the full validation accepts and return what the full validation returns
 * for them (an instance of the class with the body's own keys); a test holds each one to that
 * (orders.dto.spec.ts). Meant for the hottest route only, whose body is almost always the plain,
 * valid case: class-validator and class-transformer are a visible share of the CPU an order costs
 * (`npm run bench:orders`).
 */
export interface FastAcceptingDto {
  fastAccept(body: unknown): object | null;
}

/** The global pipe: a body whose DTO class takes it as it is skips the full validation. */
class RelayValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body') {
      const accepted = (metadata.metatype as Partial<FastAcceptingDto> | undefined)?.fastAccept?.(value);
      if (accepted) return accepted;
    }
    return super.transform(value, metadata);
  }
}

/**
 * Body and query validation with class-validator; failures are 400 `bad_request` with `fields`.
 * `fastAccepts: false` (tests) validates every body in full.
 */
export function createValidationPipe(options: { fastAccepts?: boolean } = {}): ValidationPipe {
  return new (options.fastAccepts === false ? ValidationPipe : RelayValidationPipe)({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    exceptionFactory: (errors) => {
      const fields = collect(errors);
      return new AppError('bad_request', `invalid request: ${Object.keys(fields).join(', ')}`, { fields });
    },
  });
}

/**
 * The largest id taken in a request: ids are JavaScript numbers in the code (and bigint in the
 * database), so an id beyond Number.MAX_SAFE_INTEGER would not even be read exactly (and one beyond
 * bigint would fail in the database: a 500).
 */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/**
 * A path key (`@Param(name, pathKey(…))`) that no record can have is that route's 404 at once: what
 * `accepts` refuses is never looked up (a NUL byte, which PostgreSQL's text cannot hold, would fail
 * the query: a 500).
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
