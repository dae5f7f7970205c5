/**
 * A coded error of the contract: `error_code` (CONTRACT §5), HTTP status and message. Services throw
 * these (never HTTP exceptions); the exception filter writes the `{ok:false,…}` envelope.
 *
 * The status comes from the code's row in the error-code table (error-codes.ts): `new AppError(code,
 * message)` takes only a code of the table. An upstream refusal passed on with the upstream's own
 * code and status is made by `AppError.fromUpstream`.
 */
import { statusOf, type ErrorCode } from './error-codes.js';

export class AppError extends Error {
  /** The table's code, or the upstream's own (fromUpstream). */
  readonly code: string;
  readonly httpStatus: number;
  /** Extra members of the envelope, e.g. `fields`, `order`, `run_id`. */
  readonly extra: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.httpStatus = statusOf(code);
    this.extra = extra;
  }

  /**
   * An upstream refusal passed on as the upstream gave it: its own code (which need not be in the
   * table, e.g. `payment_failed`) and the status the relay answers it with.
   */
  static fromUpstream(code: string, httpStatus: number, message: string, extra: Record<string, unknown> = {}): AppError {
    return AppError.coded(code, httpStatus, message, extra);
  }

  /** The same refusal (code, status, extra members) with another message, e.g. naming where in a request it was met. */
  withMessage(message: string): AppError {
    return AppError.coded(this.code, this.httpStatus, message, this.extra);
  }

  /** An error with this code and status as they are, without the table. */
  private static coded(code: string, httpStatus: number, message: string, extra: Record<string, unknown>): AppError {
    const e = new AppError('upstream_error', message, extra);
    return Object.assign(e, { code, httpStatus });
  }
}

export const badRequest = (message: string, fields?: Record<string, string[]>) =>
  new AppError('bad_request', message, fields ? { fields } : {});
