import type { UpstreamProduct, UpstreamProductPage } from '../upstream/upstream.types.js';
import { PageFingerprints } from './page-fingerprints.js';
import { productFingerprint } from './sku-diff.js';

function product(id: number, price = '10.00', skus = 1): UpstreamProduct {
  return {
    id,
    slug: `product-${id}`,
    title: { en: `Product ${id}` },
    description: { en: 'Desc' },
    price_amount: price,
    fulfillment_type: 'auto',
    is_active: true,
    category_id: 101,
    skus: Array.from({ length: skus }, (_, i) => ({
      id: id * 10 + i,
      sku_code: `SKU-${id}-${i}`,
      spec_values: {},
      price_amount: price,
      stock_status: 'in_stock' as const,
      stock_quantity: 5,
      is_active: true,
    })),
  };
}

/** A page as the client returns it once parsed, with its body's digest: fresh objects every time. */
function page(ids: number[], digest: string | undefined, price = '10.00'): { parsed: UpstreamProductPage; digest: string | undefined } {
  return {
    parsed: { ok: true, items: ids.map((id) => product(id, price, id % 3 === 0 ? 2 : 1)), total: 100, page: 3, page_size: 7 },
    digest,
  };
}

/** Hands a parsed page to the memory, as the products pass does. */
function add(memo: PageFingerprints, p: ReturnType<typeof page>): void {
  memo.addPage(p.parsed, p.digest);
}

/** The stored fingerprints of these products as `page` builds them. */
function index(ids: number[], price = '10.00'): Map<number, string> {
  return new Map(ids.map((id) => [id, productFingerprint(product(id, price, id % 3 === 0 ? 2 : 1))]));
}

/** A memory after one complete pass over `pages`, at the start of the next pass. */
function afterPass(pages: Array<ReturnType<typeof page>>, maxProducts = 1000): PageFingerprints {
  const memo = new PageFingerprints(maxProducts);
  memo.startPass();
  for (const p of pages) add(memo, p);
  memo.completePass();
  memo.startPass();
  return memo;
}

describe('PageFingerprints', () => {
  it('computes the fingerprints of a page seen for the first time, as productFingerprint does', () => {
    const memo = new PageFingerprints(1000);
    memo.startPass();
    expect(memo.unchangedPage('d1', index([1, 2, 3]))).toBeUndefined(); // never received
    const p = page([1, 2, 3], 'd1');
    add(memo, p);
    for (const item of p.parsed.items) expect(memo.fingerprintOf(item)).toBe(productFingerprint(item));
    expect(memo.stats).toEqual({ unchanged: 0, remembered: 0, computed: 1, beforeIndex: 0 });
  });

  it('a body received by the previous complete pass whose products equal the stored fingerprints is unchanged: not parsed', () => {
    const memo = afterPass([page([1, 2, 3], 'd1')]);
    const unchanged = memo.unchangedPage('d1', index([1, 2, 3, 4]));
    expect(unchanged).toEqual({
      items: [],
      unchanged: [
        { id: 1, skus: 1 },
        { id: 2, skus: 1 },
        { id: 3, skus: 2 },
      ],
      total: 100,
      page: 3,
      page_size: 7,
    });
    expect(memo.stats).toEqual({ unchanged: 1, remembered: 0, computed: 0, beforeIndex: 0 });
    // and it is remembered again for the pass after
    memo.completePass();
    memo.startPass();
    expect(memo.unchangedPage('d1', index([1, 2, 3]))).toBeDefined();
  });

  it(
    'the same body is parsed when a stored fingerprint differs, or before the stored ones are read; its fingerprints ' +
      'then come from memory',
    () => {
      const memo = afterPass([page([1, 2, 3], 'd1')]);
      const moved = index([1, 2, 3]);
      moved.delete(2); // e.g. product 2 was unlisted since, its fingerprint dropped
      expect(memo.unchangedPage('d1', moved)).toBeUndefined();
      expect(memo.unchangedPage('d1', null)).toBeUndefined();
      const parsed = page([1, 2, 3], 'd1');
      add(memo, parsed);
      expect(memo.stats).toEqual({ unchanged: 0, remembered: 1, computed: 0, beforeIndex: 1 });
      expect(parsed.parsed.items.map((p) => memo.fingerprintOf(p))).toEqual(parsed.parsed.items.map((p) => productFingerprint(p)));
    },
  );

  it('another digest (a changed page) is computed from its products', () => {
    const memo = afterPass([page([4, 5, 6], 'd2')]);
    expect(memo.unchangedPage('d2-changed', index([4, 5, 6], '11.00'))).toBeUndefined();
    const changed = page([4, 5, 6], 'd2-changed', '11.00');
    add(memo, changed);
    expect(memo.stats).toEqual({ unchanged: 0, remembered: 0, computed: 1, beforeIndex: 0 });
    expect(memo.fingerprintOf(changed.parsed.items[0])).toBe(productFingerprint(changed.parsed.items[0]));
    expect(memo.fingerprintOf(changed.parsed.items[0])).not.toBe(productFingerprint(product(4)));
  });

  it('a page without a digest is always computed; a product of no page is computed when asked', () => {
    const memo = afterPass([page([1], undefined)]);
    add(memo, page([1], undefined));
    expect(memo.stats).toEqual({ unchanged: 0, remembered: 0, computed: 1, beforeIndex: 0 });
    const stranger = product(99);
    expect(memo.fingerprintOf(stranger)).toBe(productFingerprint(stranger));
  });

  it('what an incomplete pass saw is not remembered; the last complete pass still is', () => {
    const known = index([1, 2, 3, 4]);
    const memo = afterPass([page([1, 2], 'd1')]);
    add(memo, page([3, 4], 'd2')); // this pass fails
    memo.startPass();
    expect(memo.unchangedPage('d2', known)).toBeUndefined();
    add(memo, page([3, 4], 'd2'));
    expect(memo.unchangedPage('d1', known)).toBeDefined();
    memo.completePass();
    // this pass saw d1 and d2: both are remembered
    memo.startPass();
    expect(memo.unchangedPage('d2', known)).toBeDefined();
    expect(memo.unchangedPage('d1', known)).toBeDefined();
  });

  it('keeps no more pages than maxProducts allows', () => {
    const known = index([1, 2, 3, 4, 5, 6]);
    const memo = afterPass([page([1, 2, 3], 'd1'), page([4, 5, 6], 'd2')], 4); // 6 products > 4: d2 not kept
    expect(memo.unchangedPage('d1', known)).toBeDefined();
    expect(memo.unchangedPage('d2', known)).toBeUndefined();
  });
  it('never remembers a page with a product left out for its shape: the next pass parses it again', () => {
    const skippedOnes = [{ product_id: 3, reason: 'title: expected an object of texts by language, got null' }];
    const p = page([1, 2], 'd1');
    const memo = afterPass([{ parsed: { ...p.parsed, skipped: skippedOnes }, digest: p.digest }]);
    expect(memo.unchangedPage('d1', index([1, 2, 3]))).toBeUndefined();
    // its products' fingerprints are still given for the pass that parsed it
    const again = page([1, 2], 'd1');
    memo.addPage({ ...again.parsed, skipped: skippedOnes }, again.digest);
    for (const item of again.parsed.items) expect(memo.fingerprintOf(item)).toBe(productFingerprint(item));
  });
});
