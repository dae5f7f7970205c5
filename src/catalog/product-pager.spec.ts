import { UpstreamDefinitiveError, UpstreamRetryableError, UpstreamUnknownError } from '../upstream/upstream.errors.js';
import type { ProductPageQuery, UpstreamProduct, UpstreamProductPage } from '../upstream/upstream.types.js';
import {
  AbortedError,
  DEFAULT_RETRY_POLICY,
  fetchAllPages,
  PageFailure,
  retryDecision,
  withRetries,
  type FetchedPage,
  type ListedPage,
  type PagerOptions,
} from './product-pager.js';

const product = (id: number): UpstreamProduct => ({
  id,
  slug: `p-${id}`,
  title: { en: `P${id}` },
  description: {},
  price_amount: '1.00',
  fulfillment_type: 'auto',
  is_active: true,
  category_id: 101,
  skus: [],
});

/** A fake upstream listing (the seam: a function, not a module mock) with a page-size cap. */
class FakeListing {
  ids: number[];
  calls: ProductPageQuery[] = [];
  failures = new Map<number, unknown[]>();
  onServed?: (page: number) => void;
  constructor(
    count: number,
    readonly cap = 50,
  ) {
    this.ids = Array.from({ length: count }, (_, i) => i + 1);
  }
  fetch = async (q: ProductPageQuery): Promise<UpstreamProductPage> => {
    this.calls.push(q);
    await new Promise((r) => setImmediate(r));
    const queue = this.failures.get(q.page);
    if (queue && queue.length > 0) throw queue.shift();
    const size = Math.min(q.pageSize, this.cap);
    const start = (q.page - 1) * size;
    const items = this.ids.slice(start, start + size).map(product);
    const answer: UpstreamProductPage = { ok: true, items, total: this.ids.length, page: q.page, page_size: size };
    this.onServed?.(q.page);
    return answer;
  };
}

const noSleep = async () => undefined;
const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 1 };

async function run(listing: FakeListing, over: Partial<PagerOptions> = {}) {
  const pages: FetchedPage[] = [];
  const result = await fetchAllPages({
    fetchPage: listing.fetch,
    requestedPageSize: 100,
    concurrency: 3,
    retry: policy,
    sleep: noSleep,
    onPage: async (p) => {
      pages.push(p);
    },
    ...over,
  });
  const seen = pages.flatMap((p) => p.items.map((i) => i.id));
  return { result, pages, seen };
}

describe('fetchAllPages', () => {
  it('counts the products of a page known unchanged (not parsed) like the others: such a page is not the end of the listing', async () => {
    const listing = new FakeListing(120, 50);
    // page 2 comes as its caller recognised it: its products as `unchanged`, no items
    const fetchPage = async (q: ProductPageQuery): Promise<ListedPage> => {
      const page = await listing.fetch(q);
      return q.page === 2 ? { ...page, items: [], unchanged: page.items.map((p) => ({ id: p.id, skus: 1 })) } : page;
    };
    const { result, pages, seen } = await run(listing, { fetchPage });
    expect(result).toMatchObject({ pages: 3, total: 120, products: 120 });
    expect(seen).toHaveLength(70);
    const unchanged = pages.flatMap((p) => p.unchanged.map((u) => u.id));
    expect(unchanged).toEqual(Array.from({ length: 50 }, (_, i) => 51 + i));
    expect(pages.every((p) => p.page === 2 || p.unchanged.length === 0)).toBe(true);
    // pages written together keep them too
    const slow = async (p: FetchedPage) => {
      batched.push(p);
      await new Promise((r) => setTimeout(r, 5));
    };
    const batched: FetchedPage[] = [];
    await run(listing, { fetchPage, writeBatch: 3, writeConcurrency: 1, onPage: slow });
    expect(batched.flatMap((p) => p.unchanged.map((u) => u.id))).toEqual(unchanged);
    expect(batched.reduce((n, p) => n + p.items.length + p.unchanged.length, 0)).toBe(120);
  });

  it('counts a page whose products were all left out for their shape: such a page is not the end of the listing', async () => {
    const listing = new FakeListing(120, 50);
    const fetchPage = async (q: ProductPageQuery): Promise<UpstreamProductPage> => {
      const page = await listing.fetch(q);
      return q.page === 2
        ? {
            ...page,
            items: [],
            skipped: page.items.map((p) => ({ product_id: p.id, reason: 'title: expected an object of texts by language, got null' })),
          }
        : page;
    };
    const { result, pages, seen } = await run(listing, { fetchPage });
    expect(result).toMatchObject({ pages: 3, total: 120, products: 120 });
    expect(seen).toHaveLength(70);
    expect(pages.flatMap((p) => p.skipped.map((x) => x.product_id))).toEqual(Array.from({ length: 50 }, (_, i) => 51 + i));
    // pages written together keep them too
    const batched: FetchedPage[] = [];
    const slow = async (p: FetchedPage) => {
      batched.push(p);
      await new Promise((r) => setTimeout(r, 5));
    };
    await run(listing, { fetchPage, writeBatch: 3, writeConcurrency: 1, onPage: slow });
    expect(batched.reduce((n, p) => n + p.skipped.length, 0)).toBe(50);
  });

  it('follows the echoed page size, not the one asked for', async () => {
    const listing = new FakeListing(120, 50);
    const { result, seen } = await run(listing);
    expect(result).toMatchObject({ pages: 3, pageSize: 50, total: 120, products: 120 });
    expect(new Set(seen).size).toBe(120);
    expect(listing.calls[0].pageSize).toBe(100);
    expect(listing.calls.slice(1).every((c) => c.pageSize === 50)).toBe(true);
    expect(listing.calls.map((c) => c.page).sort((a, b) => a - b)).toEqual([1, 2, 3]);
  });

  it('handles an empty catalog and an exact multiple of the page size', async () => {
    expect((await run(new FakeListing(0))).result).toMatchObject({ pages: 1, products: 0 });
    const exact = new FakeListing(100, 50);
    const r = await run(exact);
    expect(r.result.products).toBe(100);
    expect(exact.calls).toHaveLength(2);
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    const listing = new FakeListing(1000, 10);
    let inFlight = 0;
    let peak = 0;
    const fetchPage = async (q: ProductPageQuery) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      try {
        return await listing.fetch(q);
      } finally {
        inFlight--;
      }
    };
    const { result } = await run(listing, { fetchPage, concurrency: 4 });
    expect(result.products).toBe(1000);
    expect(peak).toBeLessThanOrEqual(4);
    expect(peak).toBeGreaterThan(1);
  });

  it('hands pages to onPage one at a time, or writeConcurrency at a time', async () => {
    for (const writers of [1, 3]) {
      const listing = new FakeListing(500, 10);
      let writing = 0;
      let peak = 0;
      const { result } = await run(listing, {
        concurrency: 4,
        writeConcurrency: writers,
        onPage: async () => {
          writing++;
          peak = Math.max(peak, writing);
          await new Promise((r) => setTimeout(r, 2));
          writing--;
        },
      });
      expect(result.products).toBe(500);
      expect(peak).toBeLessThanOrEqual(writers);
      if (writers > 1) expect(peak).toBeGreaterThan(1);
    }
  });

  it('a total that grows while paging extends the pass', async () => {
    const listing = new FakeListing(100, 50);
    listing.onServed = (page) => {
      if (page === 1) listing.ids.unshift(0); // inserted at the front after page 1
    };
    const { result, seen } = await run(listing, { concurrency: 1 });
    expect(result.pages).toBe(3);
    expect(result.total).toBe(101);
    expect(new Set(seen)).toEqual(new Set(Array.from({ length: 100 }, (_, i) => i + 1)));
  });

  it('stops at an empty page', async () => {
    const listing = new FakeListing(200, 50);
    listing.onServed = (page) => {
      if (page === 1) listing.ids = listing.ids.slice(0, 60); // shrinks under our feet
    };
    const { result } = await run(listing, { concurrency: 1 });
    expect(listing.calls.map((c) => c.page)).toEqual([1, 2, 3]);
    expect(result.pages).toBe(3);
  });

  it('says when the total moved between pages (a product withdrawn or inserted), not when it held', async () => {
    const steady = await run(new FakeListing(120, 50));
    expect(steady.result).toMatchObject({ totalChanged: false, total: 120, minTotal: 120 });

    // Withdrawn after page 1: product 51 moves onto page 1, already fetched, and is missed.
    const shrinking = new FakeListing(120, 50);
    shrinking.onServed = (page) => {
      if (page === 1) shrinking.ids.splice(0, 1);
    };
    const shrunk = await run(shrinking, { concurrency: 1 });
    expect(shrunk.seen).not.toContain(51);
    expect(shrunk.result).toMatchObject({ totalChanged: true, total: 120, minTotal: 119 });

    const growing = new FakeListing(120, 50);
    growing.onServed = (page) => {
      if (page === 2) growing.ids.unshift(0);
    };
    expect((await run(growing, { concurrency: 1 })).result).toMatchObject({ totalChanged: true, total: 121, minTotal: 120 });
  });

  it('retries a failing page with backoff, waits out a 429, and completes', async () => {
    const listing = new FakeListing(150, 50);
    listing.failures.set(2, [
      new UpstreamUnknownError('listProducts', 'http_503', 503),
      new UpstreamRetryableError('listProducts', 'ECONNREFUSED'),
    ]);
    listing.failures.set(3, [new UpstreamRetryableError('listProducts', 'rate_limited', 1500, 429)]);
    const waits: number[] = [];
    const { result } = await run(listing, { sleep: async (ms) => void waits.push(ms) });
    expect(result.products).toBe(150);
    expect(waits).toContain(1500);
    expect(waits).toHaveLength(3);
  });

  it('a page failing for good fails the pass, naming the page and the cause', async () => {
    const listing = new FakeListing(150, 50);
    listing.failures.set(
      3,
      Array.from({ length: 10 }, () => new UpstreamUnknownError('listProducts', 'http_503', 503)),
    );
    const written: number[] = [];
    const err = await fetchAllPages({
      fetchPage: listing.fetch,
      requestedPageSize: 50,
      concurrency: 2,
      retry: policy,
      sleep: noSleep,
      onPage: async (p) => void written.push(p.page),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PageFailure);
    expect((err as PageFailure).page).toBe(3);
    expect((err as PageFailure).tries).toBe(policy.maxAttempts);
    expect((err as PageFailure).message).toMatch(/^page 3: upstream listProducts outcome unknown: http_503 \(after 4 tries\)/);
    expect(written).not.toContain(3);
  });

  it('a failed pass leaves no retry behind it', async () => {
    const listing = new FakeListing(100, 10);
    listing.failures.set(2, [new UpstreamDefinitiveError('listProducts', 'bad_request', 400, 'no')]);
    listing.failures.set(
      3,
      Array.from({ length: 10 }, () => new UpstreamUnknownError('listProducts', 'http_503', 503)),
    );
    const err = await run(listing, { concurrency: 3, retry: { ...policy, baseDelayMs: 10 }, sleep: undefined }).catch((e: unknown) => e);
    expect((err as PageFailure).page).toBe(2);
    const calls = listing.calls.length;
    await new Promise((r) => setTimeout(r, 120));
    expect(listing.calls.length).toBe(calls);
  });

  it('does not retry a coded refusal', async () => {
    const listing = new FakeListing(10, 50);
    listing.failures.set(1, [new UpstreamDefinitiveError('listProducts', 'bad_request', 400, 'updated_after not supported')]);
    const err = (await run(listing, { updatedAfter: new Date() }).catch((e: unknown) => e)) as PageFailure;
    expect(err.page).toBe(1);
    expect(err.upstreamCause).toBeInstanceOf(UpstreamDefinitiveError);
    expect(listing.calls).toHaveLength(1);
    expect(listing.calls[0].updatedAfter).toBeInstanceOf(Date);
  });

  it('a failing write fails the pass', async () => {
    const listing = new FakeListing(100, 50);
    const err = await run(listing, {
      onPage: async (p) => {
        if (p.page === 2) throw new Error('disk full');
      },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PageFailure);
    expect((err as PageFailure).message).toBe('page 2: writing failed: disk full');
  });

  it('hands pages that waited for a writer over together, up to writeBatch, in arrival order', async () => {
    const listing = new FakeListing(1000, 10);
    const batches: FetchedPage[] = [];
    const { result } = await run(listing, {
      concurrency: 4,
      writeBatch: 3,
      onPage: async (p) => {
        batches.push(p);
        await new Promise((r) => setTimeout(r, 3)); // slower than the fetches: pages wait
      },
    });
    expect(result.products).toBe(1000);
    const pages = batches.flatMap((b) => b.pages);
    expect([...pages].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(batches.every((b) => b.pages.length <= 3 && b.page === b.pages[0])).toBe(true);
    expect(batches.some((b) => b.pages.length > 1)).toBe(true);
    // each batch holds its pages' products, page after page
    for (const b of batches) {
      expect(b.items.map((i) => i.id)).toEqual(b.pages.flatMap((n) => Array.from({ length: 10 }, (_, i) => (n - 1) * 10 + i + 1)));
    }
  });

  it('writes that keep up get their pages one by one, even with writeBatch', async () => {
    const { pages } = await run(new FakeListing(300, 10), { concurrency: 1, writeBatch: 4 });
    expect(pages.every((p) => p.pages.length === 1)).toBe(true);
  });

  it('a batch that fails to be written names its pages', async () => {
    const listing = new FakeListing(1000, 10);
    const err = (await run(listing, {
      concurrency: 4,
      writeBatch: 4,
      onPage: async (p) => {
        await new Promise((r) => setTimeout(r, 3));
        if (p.pages.length > 1) throw new Error('disk full');
      },
    }).catch((e: unknown) => e)) as PageFailure;
    expect(err).toBeInstanceOf(PageFailure);
    expect(err.pages.length).toBeGreaterThan(1);
    expect(err.page).toBe(err.pages[0]);
    expect(err.message).toBe(`pages ${err.pages.join(', ')}: writing failed: disk full`);
  });

  it('an abort ends the pass at once', async () => {
    const listing = new FakeListing(1000, 10);
    const ac = new AbortController();
    const err = await run(listing, {
      signal: ac.signal,
      onPage: async (p) => {
        if (p.page === 3) ac.abort();
      },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortedError);
    expect(listing.calls.length).toBeLessThan(20);
  });
});

describe('retryDecision', () => {
  it('never retries a definitive refusal or a non-upstream error', () => {
    expect(retryDecision(new UpstreamDefinitiveError('x', 'bad_request', 400, ''), 1, 0, DEFAULT_RETRY_POLICY)).toEqual({ retry: false });
    expect(retryDecision(new Error('bug'), 1, 0, DEFAULT_RETRY_POLICY)).toEqual({ retry: false });
  });

  it('backs off exponentially up to the cap, then gives up', () => {
    const p = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 300, maxAttempts: 4 };
    const e = new UpstreamUnknownError('x', 'http_502', 502);
    expect(retryDecision(e, 1, 0, p, 0.5)).toEqual({ retry: true, delayMs: 100, rateLimited: false });
    expect(retryDecision(e, 2, 0, p, 0.5)).toEqual({ retry: true, delayMs: 200, rateLimited: false });
    expect(retryDecision(e, 3, 0, p, 0.5)).toEqual({ retry: true, delayMs: 300, rateLimited: false });
    expect(retryDecision(e, 4, 0, p, 0.5)).toEqual({ retry: false });
  });

  it('waits for Retry-After on a 429 (default and cap), a bounded number of times', () => {
    const p = { ...DEFAULT_RETRY_POLICY, maxRateLimitWaits: 2, defaultRetryAfterMs: 700, maxRetryAfterMs: 5000 };
    expect(retryDecision(new UpstreamRetryableError('x', 'rate_limited', 2000, 429), 0, 0, p)).toEqual({
      retry: true,
      delayMs: 2000,
      rateLimited: true,
    });
    expect(retryDecision(new UpstreamRetryableError('x', 'rate_limited', undefined, 429), 0, 1, p)).toEqual({
      retry: true,
      delayMs: 700,
      rateLimited: true,
    });
    expect(retryDecision(new UpstreamRetryableError('x', 'rate_limited', 99_000, 429), 0, 0, p)).toEqual({
      retry: true,
      delayMs: 5000,
      rateLimited: true,
    });
    expect(retryDecision(new UpstreamRetryableError('x', 'rate_limited', 10, 429), 0, 2, p)).toEqual({ retry: false });
  });
});

describe('retryDecision under the request budget', () => {
  const p = { ...DEFAULT_RETRY_POLICY, budgeted: true, maxBudgetWaits: 3, baseDelayMs: 100 };

  it('sends a 429 again at once (the next token waits for the block), whatever its Retry-After, up to maxBudgetWaits', () => {
    expect(retryDecision(new UpstreamRetryableError('x', 'rate_limited', undefined, 429), 0, 0, p)).toEqual({
      retry: true,
      delayMs: 0,
      rateLimited: true,
    });
    expect(retryDecision(new UpstreamRetryableError('x', 'rate_limited', 30_000, 429), 0, 2, p)).toEqual({
      retry: true,
      delayMs: 0,
      rateLimited: true,
    });
    expect(retryDecision(new UpstreamRetryableError('x', 'rate_limited', undefined, 429), 0, 3, p)).toEqual({ retry: false });
  });

  it('a wait for the budget that ran out is tried again after a short pause, not as a failed try', () => {
    expect(retryDecision(new UpstreamRetryableError('x', 'budget_wait_exceeded'), 4, 0, p)).toEqual({
      retry: true,
      delayMs: 100,
      rateLimited: true,
    });
  });

  it('without the budget, budget_wait_exceeded is an ordinary retryable failure', () => {
    const off = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxAttempts: 2 };
    expect(retryDecision(new UpstreamRetryableError('x', 'budget_wait_exceeded'), 1, 0, off, 0.5)).toEqual({
      retry: true,
      delayMs: 100,
      rateLimited: false,
    });
    expect(retryDecision(new UpstreamRetryableError('x', 'budget_wait_exceeded'), 2, 0, off, 0.5)).toEqual({ retry: false });
  });
});

describe('withRetries', () => {
  it('under the budget, 429s and budget refusals never use up the tries of other failures', async () => {
    const errors = [
      ...Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? new UpstreamRetryableError('x', 'rate_limited', undefined, 429)
          : new UpstreamRetryableError('x', 'budget_wait_exceeded'),
      ),
      new UpstreamUnknownError('x', 'http_503', 503),
    ];
    let calls = 0;
    const value = await withRetries(
      async () => {
        calls++;
        const e = errors.shift();
        if (e) throw e;
        return 'ok';
      },
      { policy: { ...policy, maxAttempts: 2, budgeted: true, maxBudgetWaits: 20 }, sleep: noSleep },
    );
    expect(value).toBe('ok');
    expect(calls).toBe(22);
  });

  it('429s do not use up the tries of other failures', async () => {
    const errors = [
      new UpstreamRetryableError('x', 'rate_limited', 1, 429),
      new UpstreamUnknownError('x', 'http_503', 503),
      new UpstreamRetryableError('x', 'rate_limited', 1, 429),
      new UpstreamUnknownError('x', 'http_503', 503),
      new UpstreamUnknownError('x', 'http_503', 503),
    ];
    let calls = 0;
    const value = await withRetries(
      async () => {
        calls++;
        const e = errors.shift();
        if (e) throw e;
        return 'ok';
      },
      { policy: { ...policy, maxAttempts: 4 }, sleep: noSleep },
    );
    expect(value).toBe('ok');
    expect(calls).toBe(6);
  });
});
