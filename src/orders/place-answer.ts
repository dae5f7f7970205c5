/**
 * The HTTP answer of a placement (CONTRACT §5 `POST /internal/orders`), pure: from the order as the
 * outcome left it and the outcome of its send, the status of a success, or the error to answer with
 * (its code, HTTP status and message; the order goes in the envelope). The service turns an error
 * plan into an AppError.
 *
 * | order after the send                 | answer                                                              |
 * |--------------------------------------|---------------------------------------------------------------------|
 * | `submit_unknown`, `queued`           | 202                                                                 |
 * | `rejected`, the upstream refused     | its code: 502 `upstream_auth_failed` for a 401/403; else its status, or, for an `ok: false` answered 200, 402 `payment_failed` / 502 |
 * | `rejected`, nothing reached it       | 503 `upstream_unavailable`                                          |
 * | `submitting` (a status not known)    | 201 when the upstream accepted it, else 202                         |
 * | any upstream state                   | 201                                                                 |
 */
import type { OrderStatus } from './order-state.js';

/** What the answer needs of the send's outcome (order-submitter.service.ts SendOutcome). */
export type AnsweredOutcome =
  | { kind: 'accepted' | 'unavailable' | 'unknown' | 'queued' }
  | { kind: 'rejected'; errorCode: string; httpStatus: number; message: string };

export type PlaceAnswer =
  | { kind: 'ok'; httpStatus: 201 | 202 }
  /** one of our codes (error-codes.ts), with the status its table gives it */
  | { kind: 'error'; code: 'upstream_auth_failed' | 'upstream_unavailable'; httpStatus: 502 | 503; message: string; upstream: false }
  /** the upstream's own code and status, kept as they are (AppError.fromUpstream) */
  | { kind: 'error'; code: string; httpStatus: number; message: string; upstream: true };

/**
 * The code a refusal of the create is known by (CONTRACT §5, §11): `upstream_auth_failed` for a 401/403
 * (whatever the upstream named it), else the upstream's own code. An offer order's failover decides
 * on it, as the answer does.
 */
export function refusalCode(outcome: { errorCode: string; httpStatus: number }): string {
  return outcome.httpStatus === 401 || outcome.httpStatus === 403 ? 'upstream_auth_failed' : outcome.errorCode;
}

export function placeAnswer(order: { status: OrderStatus | string; errorMessage: string | null }, outcome: AnsweredOutcome): PlaceAnswer {
  switch (order.status) {
    case 'submit_unknown':
    case 'queued':
      return { kind: 'ok', httpStatus: 202 };
    case 'rejected': {
      if (outcome.kind === 'rejected') {
        const message = `the upstream refused the order: ${outcome.message}`;
        if (refusalCode(outcome) === 'upstream_auth_failed')
          return { kind: 'error', code: 'upstream_auth_failed', httpStatus: 502, message, upstream: false };
        // the upstream's own code, with its status (an `ok: false` answered 200: 402 for `payment_failed`, else 502)
        const status = outcome.httpStatus >= 400 ? outcome.httpStatus : outcome.errorCode === 'payment_failed' ? 402 : 502;
        return { kind: 'error', code: outcome.errorCode, httpStatus: status, message, upstream: true };
      }
      return {
        kind: 'error',
        code: 'upstream_unavailable',
        httpStatus: 503,
        message: order.errorMessage ?? 'the upstream could not be reached',
        upstream: false,
      };
    }
    case 'submitting':
      // accepted with a status we do not know (kept as an anomaly, followed): the upstream has it
      return { kind: 'ok', httpStatus: outcome.kind === 'accepted' ? 201 : 202 };
    default:
      return { kind: 'ok', httpStatus: 201 };
  }
}
