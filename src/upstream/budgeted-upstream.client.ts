/**
 * The upstream port under the request budget: every call takes a token of its class from the
 * `UpstreamBudgetService` (src/budget), then goes through the HTTP adapter. Bound to `UpstreamClient`
 * by the UpstreamModule.
 *
 * - The class is `opts.priority`, else the operation's default (DEFAULT_PRIORITY in upstream.client.ts).
 * - `opts.maxWaitMs` bounds the whole wait for the budget, resends included: past it, the call rejects
 *   with `BudgetWaitExceeded` (retryable; nothing was sent). A read's signal aborts the wait too.
 * - An HTTP 429 (retryable `rate_limited`, whatever its body, with or without `Retry-After`) is recorded
 *   with `noteRateLimited`: the key is blocked on every replica. A read then waits through the block
 *   and is sent again (at most MAX_RESENDS_AFTER_429 times, then the 429 is the answer); a create or a
 *   cancel rejects with the `rate_limited` error at once, since the upstream processed nothing: the
 *   caller sends the same request again (the orders code: the same attempt, under the same number).
 * - With the budget off, calls go straight to the adapter, except while this process knows the key
 *   is blocked (a 429 it met, `UpstreamBudgetService.untilUnblocked`): a call then waits for the
 *   block's end first (within its signal and maxWaitMs). A 429 is the call's answer as it came.
 */
import { performance } from 'node:perf_hooks';
import type { UpstreamBudgetService } from '../budget/upstream-budget.service.js';
import { UpstreamRetryableError } from './upstream.errors.js';
import {
  DEFAULT_PRIORITY,
  UpstreamClient,
  type PageRecognizer,
  type RecognizedPage,
  type UpstreamCallOptions,
  type UpstreamOperation,
} from './upstream.client.js';
import type {
  ProductPageQuery,
  UpstreamCanceledOrder,
  UpstreamCategoryList,
  UpstreamCreateOrderRequest,
  UpstreamCreatedOrder,
  UpstreamOrder,
  UpstreamPing,
  UpstreamProduct,
  UpstreamProductPage,
} from './upstream.types.js';

/** How many times a read answered 429 is sent again after the block before the 429 is its answer. */
export const MAX_RESENDS_AFTER_429 = 3;

const WRITES: ReadonlySet<UpstreamOperation> = new Set<UpstreamOperation>(['createOrder', 'cancelOrder']);

/** The upstream's "slow down": HTTP 429, classified retryable `rate_limited` by the adapter. */
export function isRateLimited(e: unknown): e is UpstreamRetryableError {
  return e instanceof UpstreamRetryableError && (e.httpStatus === 429 || e.reason === 'rate_limited');
}

export class BudgetedUpstreamClient extends UpstreamClient {
  constructor(
    private readonly inner: UpstreamClient,
    private readonly budget: UpstreamBudgetService,
  ) {
    super();
  }

  override ping(signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamPing> {
    return this.call('ping', signal, opts, () => this.inner.ping(signal));
  }

  override listCategories(signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamCategoryList> {
    return this.call('listCategories', signal, opts, () => this.inner.listCategories(signal));
  }

  override listProducts(query: ProductPageQuery, signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamProductPage> {
    return this.call('listProducts', signal, opts, () => this.inner.listProducts(query, signal));
  }

  override listProductsRecognizing<K>(
    query: ProductPageQuery,
    recognize: PageRecognizer<K>,
    signal?: AbortSignal,
    opts?: UpstreamCallOptions,
  ): Promise<RecognizedPage<K>> {
    return this.call('listProducts', signal, opts, () => this.inner.listProductsRecognizing(query, recognize, signal));
  }

  override getProduct(id: number, signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamProduct> {
    return this.call('getProduct', signal, opts, () => this.inner.getProduct(id, signal));
  }

  override createOrder(request: UpstreamCreateOrderRequest, opts?: UpstreamCallOptions): Promise<UpstreamCreatedOrder> {
    return this.call('createOrder', undefined, opts, () => this.inner.createOrder(request));
  }

  override getOrder(id: number, signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamOrder> {
    return this.call('getOrder', signal, opts, () => this.inner.getOrder(id, signal));
  }

  override cancelOrder(id: number, opts?: UpstreamCallOptions): Promise<UpstreamCanceledOrder> {
    return this.call('cancelOrder', undefined, opts, () => this.inner.cancelOrder(id));
  }

  private async call<T>(
    operation: UpstreamOperation,
    signal: AbortSignal | undefined,
    opts: UpstreamCallOptions | undefined,
    send: () => Promise<T>,
  ): Promise<T> {
    const cls = opts?.priority ?? DEFAULT_PRIORITY[operation];
    if (!this.budget.enabled) {
      if (!opts?.granted) await this.budget.untilUnblocked(cls, { signal, maxWaitMs: opts?.maxWaitMs, operation });
      return this.sendOnce(operation, send);
    }
    const deadline = opts?.maxWaitMs === undefined ? undefined : performance.now() + Math.max(0, opts.maxWaitMs);
    for (let resends = 0; ; resends++) {
      const maxWaitMs = deadline === undefined ? undefined : Math.max(0, deadline - performance.now());
      if (resends > 0 || !opts?.granted) await this.budget.take(cls, { signal, maxWaitMs, operation });
      try {
        return await this.sendOnce(operation, send);
      } catch (e) {
        if (!isRateLimited(e) || WRITES.has(operation) || resends >= MAX_RESENDS_AFTER_429) throw e;
        // a read: the next take waits for the block's end
      }
    }
  }

  /** Sends once; records a success for the monitor and a 429 as a block of the key. */
  private async sendOnce<T>(operation: UpstreamOperation, send: () => Promise<T>): Promise<T> {
    try {
      const answer = await send();
      this.budget.noteSuccess(operation);
      return answer;
    } catch (e) {
      if (isRateLimited(e)) await this.budget.noteRateLimited(e.retryAfterMs ?? null, operation);
      throw e;
    }
  }
}
