/**
 * The budget's refusals, as errors of the upstream port's classes (upstream.errors.ts), so that code
 * that knows only those classes treats them right: nothing was sent in either case.
 */
import { UpstreamRetryableError, UpstreamUnknownError } from '../upstream/upstream.errors.js';
import type { BudgetClass } from './request-budget.js';

/**
 * The request waited `maxWaitMs` for the budget (or could not get a token before it, e.g. the key is
 * blocked for longer) and was not sent. Retryable, reason `budget_wait_exceeded`. An order create that
 * gets it is answered `queued` and sent later.
 */
export class BudgetWaitExceeded extends UpstreamRetryableError {
  constructor(
    operation: string,
    readonly cls: BudgetClass,
    readonly waitedMs: number,
    /** The end of the key's block when the budget refused for it. */
    readonly blockedUntil: Date | null,
  ) {
    super(operation, 'budget_wait_exceeded');
  }
}

/**
 * The budget could not be asked (the ledger's database failed): the request was not sent. Retryable,
 * reason `budget_unavailable`.
 */
export class BudgetUnavailable extends UpstreamRetryableError {
  constructor(
    operation: string,
    /** What the ledger threw. */ readonly failure: unknown,
  ) {
    super(operation, 'budget_unavailable');
  }
}

/**
 * The caller's signal aborted the wait for the budget: nothing was sent.
 * An unknown outcome with reason `aborted`, as the port promises for an aborted read.
 */
export class BudgetWaitAborted extends UpstreamUnknownError {
  constructor(operation: string) {
    super(operation, 'aborted');
  }
}
