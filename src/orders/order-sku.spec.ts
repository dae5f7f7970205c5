import type { StoredSku } from '../catalog/catalog.records.js';
import { pickSupplier, type SupplierSku } from './order-sku.js';

const sku = (supplier: string, key: string, listed = true): SupplierSku => {
  const [product, code] = key.split(':');
  return {
    supplier,
    currency: 'CNY',
    productFingerprint: null,
    sku: { sku_key: key, sku_code: code, product_id: Number(product), listed } as StoredSku,
  };
};

describe('pickSupplier', () => {
  it('takes the one supplier whose SKUs were read (or none), with its rows', () => {
    const rows = [sku('main', '1:A'), sku('main', '2:A')];
    expect(pickSupplier('A', rows)).toEqual({ kind: 'supplier', supplier: 'main', found: rows });
    expect(pickSupplier('A', [])).toEqual({ kind: 'supplier', supplier: null, found: [] });
  });

  it('refuses a code that listed SKUs of two suppliers carry, naming every candidate with its supplier', () => {
    const r = pickSupplier('A', [sku('second', '7:A'), sku('main', '1:A'), sku('main', '2:A', false)]);
    expect(r).toEqual({
      kind: 'ambiguous',
      candidates: [
        { supplier: 'main', sku_key: '1:A' },
        { supplier: 'second', sku_key: '7:A' },
      ],
    });
  });

  it('refuses a sku_key that two suppliers both have', () => {
    expect(pickSupplier('1:A', [sku('main', '1:A'), sku('second', '1:A')])).toMatchObject({ kind: 'ambiguous' });
  });

  it("takes the supplier with a listed SKU when the other supplier's are unlisted", () => {
    const listed = sku('second', '7:A');
    expect(pickSupplier('A', [sku('main', '1:A', false), listed])).toEqual({ kind: 'supplier', supplier: 'second', found: [listed] });
  });

  it('refuses when only unlisted SKUs of two suppliers carry the code', () => {
    expect(pickSupplier('A', [sku('main', '1:A', false), sku('second', '7:A', false)])).toEqual({
      kind: 'ambiguous',
      candidates: [
        { supplier: 'main', sku_key: '1:A' },
        { supplier: 'second', sku_key: '7:A' },
      ],
    });
  });
});
