/**
 * The page loop of a catalog pass (no Nest, no database): `GET /products` page by page, following the
 * `total` and the `page_size` the upstream echoes (it caps what was asked), `concurrency` pages in
 * flight, each page handed to `onPage` as it arrives (`writeConcurrency` at a time, in arrival order;
 * pages that arrived while every writer was busy go together, up to `writeBatch`), with backpressure
 * so that at most about 2 × `concurrency` pages ever wait, besides those being written.
 *
 * - Page 1 comes first: it tells the total and the real page size; later pages ask for that size.
 * - A `total` that grows while paging (a product inserted) extends the pass; an empty page ends it.
 *   A `total` that moves at all (grows or shrinks: a product inserted or withdrawn) may have shifted
 *   products onto pages already fetched: the result says so (`totalChanged`), for the caller to decide
 *   (a full pass confirms what it did not see; an incremental one reads the listing again).
 * - A 429 waits for its `Retry-After`; any other failure that may pass (retryable, unknown) is retried
 *   with exponential backoff a bounded number of times; a coded refusal (definitive) is not retried.
 *   Under the upstream request budget (`RetryPolicy.budgeted`) the budget paces the pass: a 429 or a
 *   wait for the budget that ran out is sent again at once (its next token waits for the budget, the
 *   key's block included) and never counts as a failed try (see retryDecision).
 * - A page that cannot be fetched fails the pass with a `PageFailure` naming the page and the cause.
 */
import { backoffMs } from '../common/backoff.js';
import { UpstreamDefinitiveError, UpstreamRetryableError, isUpstreamError } from '../upstream/upstream.errors.js';
import type { SkippedProduct } from '../upstream/upstream.shapes.js';
import type { ProductPageQuery, UpstreamProduct } from '../upstream/upstream.types.js';

export interface RetryPolicy {
  /** Tries of one request for failures other than 429 (the first try included). */
  maxAttempts: number;
  /** Backoff before the 2nd try; doubled each time, capped at maxDelayMs (±20 % jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** 429 answers one request may wait out before it fails. */
  maxRateLimitWaits: number;
  /** Wait when a 429 carries no usable Retry-After. */
  defaultRetryAfterMs: number;
  /** A longer Retry-After is waited for this long at most. */
  maxRetryAfterMs: number;
  /**
   * The reads go through the upstream request budget (UPSTREAM_RATE_LIMIT on): its token waits for the
   * pace and for the key's block after a 429, so a 429 or a `budget_wait_exceeded` is sent again at
   * once, without a wait of its own, up to `maxBudgetWaits` times.
   */
  budgeted?: boolean;
  /**
   * With `budgeted`: the 429s and budget refusals one request may meet before it fails. Each 429 that
   * reaches here already waited out blocks in the budgeted client, so this only ends a request to an
   * upstream that answers nothing but 429. Default DEFAULT_MAX_BUDGET_WAITS.
   */
  maxBudgetWaits?: number;
}

/** See RetryPolicy.maxBudgetWaits. */
export const DEFAULT_MAX_BUDGET_WAITS = 50;

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 5000,
  maxRateLimitWaits: 10,
  defaultRetryAfterMs: 1000,
  maxRetryAfterMs: 60_000,
};

export type RetryDecision = { retry: false } | { retry: true; delayMs: number; rateLimited: boolean };

/**
 * The upstream or the request budget said "not now": an HTTP 429 (`rate_limited`, whatever its body)
 * or a wait for the budget that ran out (`budget_wait_exceeded`). Nothing was processed either way.
 */
export function isBudgetRefusal(error: unknown): error is UpstreamRetryableError {
  return (
    error instanceof UpstreamRetryableError &&
    (error.httpStatus === 429 || error.reason === 'rate_limited' || error.reason === 'budget_wait_exceeded')
  );
}

/**
 * Whether to try again after `error`, given the tries so far (`attempts` failures other than 429 and
 * budget refusals, `rateLimitWaits` of those), and how long to wait first. `random` in [0, 1) gives
 * the jitter.
 */
export function retryDecision(error: unknown, attempts: number, rateLimitWaits: number, policy: RetryPolicy, random = 0.5): RetryDecision {
  if (!isUpstreamError(error) || error instanceof UpstreamDefinitiveError) return { retry: false };
  if (policy.budgeted && isBudgetRefusal(error)) {
    if (rateLimitWaits >= (policy.maxBudgetWaits ?? DEFAULT_MAX_BUDGET_WAITS)) return { retry: false };
    // The next token waits for the pace and the block. A refusal of the budget itself (it was closing,
    // or knew it could not grant in time) waits a little first, so that it is never a tight loop.
    return { retry: true, delayMs: error.reason === 'budget_wait_exceeded' ? policy.baseDelayMs : 0, rateLimited: true };
  }
  if (error instanceof UpstreamRetryableError && error.httpStatus === 429) {
    if (rateLimitWaits >= policy.maxRateLimitWaits) return { retry: false };
    const wait = error.retryAfterMs ?? policy.defaultRetryAfterMs;
    return { retry: true, delayMs: Math.min(Math.max(0, wait), policy.maxRetryAfterMs), rateLimited: true };
  }
  if (attempts >= policy.maxAttempts) return { retry: false };
  const backoff = backoffMs(attempts - 1, { baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs });
  return { retry: true, delayMs: Math.round(backoff * (0.8 + 0.4 * random)), rateLimited: false };
}

export class AbortedError extends Error {
  constructor(message = 'aborted') {
    super(message);
    this.name = 'AbortedError';
  }
}

/** A wait that an abort signal ends at once (rejecting with AbortedError). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(new AbortedError());
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export class RetriesExhausted extends Error {
  constructor(
    override readonly cause: unknown,
    /** Requests made (429s included). */
    readonly tries: number,
  ) {
    super(`${cause instanceof Error ? cause.message : String(cause)} (after ${tries} ${tries === 1 ? 'try' : 'tries'})`);
    this.name = 'RetriesExhausted';
  }
}

export interface RetryOptions {
  policy: RetryPolicy;
  signal?: AbortSignal;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  onRetry?: (info: { error: unknown; tries: number; delayMs: number; rateLimited: boolean }) => void;
}

/** Runs `op` until it succeeds or the policy gives up (then RetriesExhausted with the last cause). */
export async function withRetries<T>(op: () => Promise<T>, options: RetryOptions): Promise<T> {
  const wait = options.sleep ?? sleep;
  let attempts = 0;
  let rateLimitWaits = 0;
  for (;;) {
    if (options.signal?.aborted) throw new AbortedError();
    try {
      return await op();
    } catch (error) {
      if (options.signal?.aborted) throw new AbortedError();
      const rateLimited = options.policy.budgeted
        ? isBudgetRefusal(error)
        : error instanceof UpstreamRetryableError && error.httpStatus === 429;
      if (!rateLimited) attempts++;
      const d = retryDecision(error, attempts, rateLimitWaits, options.policy, (options.random ?? Math.random)());
      if (!d.retry) throw new RetriesExhausted(error, attempts + rateLimitWaits);
      if (d.rateLimited) rateLimitWaits++;
      options.onRetry?.({ error, tries: attempts + rateLimitWaits, delayMs: d.delayMs, rateLimited: d.rateLimited });
      await wait(d.delayMs, options.signal);
    }
  }
}

// ------------------------------------------------------------------------------------------ pager

/** A product of a page its caller recognised by the page's bytes (PageFingerprints): its id and its number of SKUs. */
export interface UnchangedProduct {
  id: number;
  skus: number;
}

/**
 * A page of the listing as `fetchPage` gives it: the upstream's page (`UpstreamProductPage`), or one
 * its caller recognised without parsing it, whose products come as `unchanged` (`items` is empty).
 */
export interface ListedPage {
  items: UpstreamProduct[];
  unchanged?: UnchangedProduct[];
  /** Items left out for their shape (`UpstreamProductPage.skipped`). */
  skipped?: SkippedProduct[];
  total: number;
  page: number;
  /** The page size the upstream actually used. */
  page_size: number;
}

export interface FetchedPage {
  /** The (first) page number. */
  page: number;
  /** Every page number it holds: more than one when pages waiting for a writer were handed over together. */
  pages: number[];
  /** Their products, in arrival order. */
  items: UpstreamProduct[];
  /** Their products known unchanged without being parsed (see `ListedPage.unchanged`). */
  unchanged: UnchangedProduct[];
  /** Their items left out for their shape (see `ListedPage.skipped`): listed, not usable. */
  skipped: SkippedProduct[];
  /** The total this page announced. */
  total: number;
  pageSize: number;
}

export interface PagePlan {
  total: number;
  pageSize: number;
  pages: number;
}

export interface PagerOptions {
  /** `signal` ends the request when the pass is stopped or settled. */
  fetchPage(query: ProductPageQuery, signal: AbortSignal): Promise<ListedPage>;
  /** The page size asked for on page 1 (the upstream may cap it). */
  requestedPageSize: number;
  concurrency: number;
  /** Pages handed to onPage at once (default 1: one at a time). */
  writeConcurrency?: number;
  /**
   * Pages waiting for a writer are handed to one onPage call together, up to this many (default 1).
   * A pass that writes most of what it fetches (a first sync) makes fewer, larger transactions; one
   * whose writes keep up never waits to fill a batch.
   */
  writeBatch?: number;
  updatedAfter?: Date;
  retry: RetryPolicy;
  signal?: AbortSignal;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Called after page 1 and whenever the plan grows. */
  onPlan?(plan: PagePlan): void;
  /** Called for every fetched page (or batch of pages), `writeConcurrency` calls at a time. A rejection fails the pass. */
  onPage(page: FetchedPage): Promise<void>;
  onRetry?(info: { page: number; error: unknown; tries: number; delayMs: number; rateLimited: boolean }): void;
}

export interface PagerResult {
  /** The last page of the plan (pages actually needed: up to the first empty page). */
  pages: number;
  pagesFetched: number;
  total: number;
  pageSize: number;
  /** Products handed to onPage (those left out for their shape included). */
  products: number;
  /**
   * Some page announced another `total` than page 1 (a product inserted or withdrawn while paging):
   * products may have moved onto pages already fetched, and this pass may have missed them.
   */
  totalChanged: boolean;
  /** The smallest `total` announced (`total` is the largest). */
  minTotal: number;
}

/** A pass that could not fetch (or write) one of its pages. */
export class PageFailure extends Error {
  constructor(
    readonly page: number,
    override readonly cause: unknown,
    readonly tries: number,
    readonly stage: 'fetch' | 'write',
    /** The pages of a batch that failed to be written together (`page` is the first). */
    readonly pages: number[] = [page],
  ) {
    super(`${pages.length > 1 ? `pages ${pages.join(', ')}` : `page ${page}`}: ${PageFailure.describe(cause, tries, stage)}`);
    this.name = 'PageFailure';
  }

  private static describe(cause: unknown, tries: number, stage: 'fetch' | 'write'): string {
    const root = cause instanceof RetriesExhausted ? cause.cause : cause;
    const text = root instanceof Error ? root.message : String(root);
    if (stage === 'write') return `writing failed: ${text}`;
    return `${text} (after ${tries} ${tries === 1 ? 'try' : 'tries'})`;
  }

  /** The upstream error behind the failure, if any. */
  get upstreamCause(): unknown {
    return this.cause instanceof RetriesExhausted ? this.cause.cause : this.cause;
  }
}

/** The first waiting page, with up to `max - 1` more that wait behind it (arrival order kept). */
function takeBatch(ready: FetchedPage[], max: number): FetchedPage {
  const taken = ready.splice(0, max);
  if (taken.length === 1) return taken[0];
  return {
    page: taken[0].page,
    pages: taken.flatMap((p) => p.pages),
    items: taken.flatMap((p) => p.items),
    unchanged: taken.flatMap((p) => p.unchanged),
    skipped: taken.flatMap((p) => p.skipped),
    total: Math.max(...taken.map((p) => p.total)),
    pageSize: taken[0].pageSize,
  };
}

/**
 * A page's products: those parsed, those known unchanged and those left out for their shape (a page of
 * badly shaped products is not the empty page past the end).
 */
function productCount(page: ListedPage): number {
  return page.items.length + (page.unchanged?.length ?? 0) + (page.skipped?.length ?? 0);
}

function fetched(page: number, res: ListedPage, pageSize: number): FetchedPage {
  return { page, pages: [page], items: res.items, unchanged: res.unchanged ?? [], skipped: res.skipped ?? [], total: res.total, pageSize };
}

function pagesFor(total: number, pageSize: number): number {
  return Math.max(1, Math.ceil(total / pageSize));
}

/** Runs the pass; resolves once every page up to the end was fetched and handed to onPage. */
export async function fetchAllPages(o: PagerOptions): Promise<PagerResult> {
  // Ends every retry of this pass once it is settled (a failed pass leaves no request behind it).
  const stop = new AbortController();
  const onOuterAbort = () => stop.abort();
  if (o.signal?.aborted) stop.abort();
  o.signal?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    return await pass(o, stop.signal);
  } finally {
    o.signal?.removeEventListener('abort', onOuterAbort);
    stop.abort();
  }
}

async function pass(o: PagerOptions, signal: AbortSignal): Promise<PagerResult> {
  const concurrency = Math.max(1, o.concurrency);
  const fetchOne = async (page: number, pageSize: number): Promise<ListedPage> => {
    let tries = 0;
    try {
      return await withRetries(
        () => {
          tries++;
          return o.fetchPage({ page, pageSize, ...(o.updatedAfter ? { updatedAfter: o.updatedAfter } : {}) }, signal);
        },
        {
          policy: o.retry,
          signal,
          sleep: o.sleep,
          onRetry: (info) => o.onRetry?.({ page, ...info }),
        },
      );
    } catch (e) {
      if (e instanceof AbortedError) throw e;
      throw new PageFailure(page, e, tries, 'fetch');
    }
  };

  const first = await fetchOne(1, o.requestedPageSize);
  const pageSize = first.page_size;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || productCount(first) > pageSize) {
    throw new PageFailure(1, new Error(`unusable page_size ${String(pageSize)} with ${productCount(first)} items`), 1, 'fetch');
  }
  let total = first.total;
  let minTotal = first.total;
  let totalChanged = false;
  let lastPage = pagesFor(total, pageSize);
  o.onPlan?.({ total, pageSize, pages: lastPage });

  return new Promise<PagerResult>((resolve, reject) => {
    const ready: FetchedPage[] = [fetched(1, first, pageSize)];
    let stopAt = productCount(first) === 0 ? 1 : Number.POSITIVE_INFINITY;
    let next = 2;
    let inFlight = 0;
    let writing = 0;
    const writers = Math.max(1, o.writeConcurrency ?? 1);
    const batch = Math.max(1, o.writeBatch ?? 1);
    let failure: unknown = null;
    let settled = false;
    let pagesFetched = 1;
    let products = 0;

    const fail = (e: unknown) => {
      failure ??= e;
    };
    const onAbort = () => {
      fail(o.signal?.aborted ? new AbortedError() : new AbortedError('the pass ended'));
      pump();
    };
    signal.addEventListener('abort', onAbort, { once: true });

    const finish = (ok: boolean) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (ok) {
        const pages = Math.min(lastPage, stopAt === Number.POSITIVE_INFINITY ? lastPage : stopAt);
        resolve({ pages, pagesFetched, total, pageSize, products, totalChanged, minTotal });
      } else reject(failure);
    };

    const accept = (page: number, res: ListedPage) => {
      pagesFetched++;
      if (res.page_size !== pageSize) {
        fail(new PageFailure(page, new Error(`page_size changed during the pass (${pageSize} then ${res.page_size})`), 1, 'fetch'));
        return;
      }
      // A shrinking total does not shorten the pass (the empty page past the end does), but it is
      // recorded as much as a growing one: either may have moved products onto pages already fetched.
      if (res.total !== first.total) totalChanged = true;
      minTotal = Math.min(minTotal, res.total);
      if (res.total > total) {
        total = res.total;
        const grown = pagesFor(total, pageSize);
        if (grown > lastPage) {
          lastPage = grown;
          o.onPlan?.({ total, pageSize, pages: lastPage });
        }
      }
      if (productCount(res) === 0) stopAt = Math.min(stopAt, page);
      ready.push(fetched(page, res, pageSize));
    };

    const pump = () => {
      if (settled) return;
      while (failure === null && inFlight < concurrency && next <= lastPage && next < stopAt && ready.length + inFlight < 2 * concurrency) {
        const page = next++;
        inFlight++;
        fetchOne(page, pageSize).then(
          (res) => {
            inFlight--;
            if (failure === null) accept(page, res);
            pump();
          },
          (e: unknown) => {
            inFlight--;
            fail(e);
            pump();
          },
        );
      }
      while (writing < writers && failure === null && ready.length > 0) {
        const item = takeBatch(ready, batch);
        writing++;
        o.onPage(item).then(
          () => {
            writing--;
            products += item.items.length + item.unchanged.length + item.skipped.length;
            pump();
          },
          (e: unknown) => {
            writing--;
            fail(e instanceof PageFailure || e instanceof AbortedError ? e : new PageFailure(item.page, e, 1, 'write', item.pages));
            pump();
          },
        );
      }
      if (writing > 0) return;
      if (failure !== null) return finish(false);
      if (inFlight === 0 && ready.length === 0 && (next > lastPage || next >= stopAt)) finish(true);
    };
    pump();
  });
}
