/**
 * A coded error of the contract: `error_code` (CONTRACT §5), HTTP status and message. Services throw
 * these (never HTTP exceptions); the exception filter writes the `{ok:false,…}` envelope.
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly httpStatus: number,
    message: string,
    /** Extra members of the envelope, e.g. `fields`, `order`, `run_id`. */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (message: string, fields?: Record<string, string[]>) =>
  new AppError('bad_request', 400, message, fields ? { fields } : {});
