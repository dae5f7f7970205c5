import { AppError, badRequest } from './app-error.js';
import { ERROR_CODES, statusOf, type ErrorCode } from './error-codes.js';
import { toEnvelope } from './exception.filter.js';

describe('AppError', () => {
  it('takes its HTTP status from the error-code table, for every code of the table', () => {
    for (const { code, status } of ERROR_CODES) {
      const e = new AppError(code as ErrorCode, 'm');
      expect({ code: e.code, httpStatus: e.httpStatus }).toEqual({ code, httpStatus: status });
      expect(statusOf(code as ErrorCode)).toBe(status);
      expect(toEnvelope(e)).toEqual({ status, body: { ok: false, error_code: code, error_message: 'm' } });
    }
    expect(badRequest('bad', { x: ['required'] })).toMatchObject({
      code: 'bad_request',
      httpStatus: 400,
      extra: { fields: { x: ['required'] } },
    });
  });

  it('takes only a code of the table', () => {
    // @ts-expect-error a code that is not in the table is a type error
    const e = new AppError('no_such_code', 'm');
    expect(e.code).toBe('no_such_code');
  });

  it("passes an upstream refusal on with the upstream's own code and status", () => {
    const e = AppError.fromUpstream('insufficient_balance', 402, 'the upstream refused the order', { order: { status: 'rejected' } });
    expect(e).toBeInstanceOf(AppError);
    expect(toEnvelope(e)).toEqual({
      status: 402,
      body: {
        ok: false,
        error_code: 'insufficient_balance',
        error_message: 'the upstream refused the order',
        order: { status: 'rejected' },
      },
    });
  });

  it('keeps the code, the status and the extra members with another message', () => {
    const e = new AppError('sku_ambiguous', 'sku_code A is carried by 2 SKUs', { candidates: ['1:A', '2:A'] }).withMessage(
      'rules.0: sku_code A is carried by 2 SKUs',
    );
    expect(toEnvelope(e)).toEqual({
      status: 409,
      body: {
        ok: false,
        error_code: 'sku_ambiguous',
        error_message: 'rules.0: sku_code A is carried by 2 SKUs',
        candidates: ['1:A', '2:A'],
      },
    });
  });
});
