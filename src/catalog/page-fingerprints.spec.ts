import type { UpstreamProduct, UpstreamProductPage } from '../upstream/upstream.types.js';
import { PageFingerprints } from './page-fingerprints.js';
import { productFingerprint } from './sku-diff.js';

function product(id: number, price = '10.00'): UpstreamProduct {
  return {
    id,
    slug: `product-${id}`,
    title: { en: `Product ${id}` },
    description: { en: 'Desc' },
    price_amount: price,
    fulfillment_type: 'auto',
    is_active: true,
    category_id: 101,
    skus: [
      { id: id * 10, sku_code: `SKU-${id}`, spec_values: {}, price_amount: price, stock_status: 'in_stock', stock_quantity: 5, is_active: true },
    ],
  };
}

/** A page as the client returns it: fresh objects every time (as a new parse of the body would give). */
function page(ids: number[], digest: string | undefined, price = '10.00'): UpstreamProductPage {
  return { ok: true, items: ids.map((id) => product(id, price)), total: 100, page: 1, page_size: ids.length, ...(digest ? { digest } : {}) };
}

describe('PageFingerprints', () => {
  it('computes the fingerprints of a page seen for the first time, as productFingerprint does', () => {
    const memo = new PageFingerprints(1000);
    memo.startPass();
    const p = page([1, 2, 3], 'd1');
    memo.addPage(p);
    for (const item of p.items) expect(memo.fingerprintOf(item)).toBe(productFingerprint(item));
    expect(memo.stats).toEqual({ remembered: 0, computed: 1 });
  });

  it('a page whose body the previous complete pass received gives its fingerprints from memory', () => {
    const memo = new PageFingerprints(1000);
    memo.startPass();
    memo.addPage(page([1, 2, 3], 'd1'));
    memo.addPage(page([4, 5, 6], 'd2'));
    memo.completePass();

    memo.startPass();
    const again = page([1, 2, 3], 'd1');
    memo.addPage(again);
    expect(memo.stats).toEqual({ remembered: 1, computed: 0 });
    expect(again.items.map((p) => memo.fingerprintOf(p))).toEqual(again.items.map((p) => productFingerprint(p)));
    // another digest (a changed page) is computed from its products
    const changed = page([4, 5, 6], 'd2-changed', '11.00');
    memo.addPage(changed);
    expect(memo.stats).toEqual({ remembered: 1, computed: 1 });
    expect(memo.fingerprintOf(changed.items[0])).toBe(productFingerprint(changed.items[0]));
    expect(memo.fingerprintOf(changed.items[0])).not.toBe(productFingerprint(product(4)));
  });

  it('a page without a digest is always computed; a product of no page is computed when asked', () => {
    const memo = new PageFingerprints(1000);
    memo.startPass();
    memo.addPage(page([1], undefined));
    memo.completePass();
    memo.startPass();
    memo.addPage(page([1], undefined));
    expect(memo.stats).toEqual({ remembered: 0, computed: 1 });
    const stranger = product(99);
    expect(memo.fingerprintOf(stranger)).toBe(productFingerprint(stranger));
  });

  it('what an incomplete pass saw is not remembered; the last complete pass still is', () => {
    const memo = new PageFingerprints(1000);
    memo.startPass();
    memo.addPage(page([1, 2], 'd1'));
    memo.completePass();
    memo.startPass();
    memo.addPage(page([3, 4], 'd2')); // this pass fails
    memo.startPass();
    memo.addPage(page([3, 4], 'd2'));
    memo.addPage(page([1, 2], 'd1'));
    expect(memo.stats).toEqual({ remembered: 1, computed: 1 });
    memo.completePass();
    // the pass before only remembers what it saw: d1 and d2 now
    memo.startPass();
    memo.addPage(page([3, 4], 'd2'));
    memo.addPage(page([1, 2], 'd1'));
    expect(memo.stats).toEqual({ remembered: 2, computed: 0 });
  });

  it('keeps no more pages than maxProducts allows', () => {
    const memo = new PageFingerprints(4);
    memo.startPass();
    memo.addPage(page([1, 2, 3], 'd1'));
    memo.addPage(page([4, 5, 6], 'd2')); // 6 > 4: not kept
    memo.completePass();
    memo.startPass();
    memo.addPage(page([1, 2, 3], 'd1'));
    memo.addPage(page([4, 5, 6], 'd2'));
    expect(memo.stats).toEqual({ remembered: 1, computed: 1 });
  });
});
