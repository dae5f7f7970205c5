import { LOW_STOCK_THRESHOLD, SandboxCatalog, stockStatusFor } from './sandbox-catalog.js';
import { formatMoney, parseMoney } from './sandbox-money.js';
import type { SandboxProduct } from './sandbox.types.js';

const fixedClock = (): number => Date.UTC(2026, 0, 1);

function pageAll(c: SandboxCatalog, size: number, after?: number): SandboxProduct[] {
  const out: SandboxProduct[] = [];
  for (let page = 1; ; page++) {
    const { items, total } = c.page(page, size, after);
    out.push(...items.map((s) => JSON.parse(s) as SandboxProduct));
    if (items.length === 0 || out.length >= total) return out;
  }
}

describe('sandbox money', () => {
  it('parses and formats decimal strings exactly', () => {
    expect(parseMoney('12')).toBe(1200n);
    expect(parseMoney('12.5')).toBe(1250n);
    expect(parseMoney('0.07')).toBe(7n);
    expect(formatMoney(1234567n)).toBe('12345.67');
    expect(formatMoney(5n)).toBe('0.05');
    expect(formatMoney(-150n)).toBe('-1.50');
    for (const wrong of ['1.234', '-1', '1e3', ' 1', '', 'abc', '1.']) expect(() => parseMoney(wrong)).toThrow(RangeError);
  });
});

describe('sandbox catalog', () => {
  it('is deterministic for a seed and differs for another seed', () => {
    const a = pageAll(new SandboxCatalog(60, 7, fixedClock), 50);
    const b = pageAll(new SandboxCatalog(60, 7, fixedClock), 50);
    const c = pageAll(new SandboxCatalog(60, 8, fixedClock), 50);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(JSON.stringify(a)).not.toBe(JSON.stringify(c));
  });

  it('generates 20,000 products (about 50,000 SKUs) with unique, stable sku codes', () => {
    const c = new SandboxCatalog(20_000, 1, fixedClock);
    expect(c.productCount).toBe(20_000);
    expect(c.listedCount).toBe(20_000);
    expect(c.skuCount).toBeGreaterThan(45_000);
    expect(c.skuCount).toBeLessThan(55_000);
    const all = pageAll(c, 1000);
    expect(all).toHaveLength(20_000);
    const codes = all.flatMap((p) => p.skus.map((s) => s.sku_code));
    expect(codes).toHaveLength(c.skuCount);
    expect(new Set(codes).size).toBe(codes.length);
    expect(all[41].skus[0].sku_code).toBe('SKU-00042-1');
  });

  it('holds every kind of product and SKU even in the default 40 products', () => {
    const all = pageAll(new SandboxCatalog(40, 1, fixedClock), 50);
    expect(all).toHaveLength(40);
    const skus = all.flatMap((p) => p.skus);
    for (const status of ['unlimited', 'in_stock', 'low_stock', 'out_of_stock'] as const) {
      expect(skus.some((s) => s.stock_status === status)).toBe(true);
    }
    expect(skus.filter((s) => s.stock_status === 'unlimited').every((s) => s.stock_quantity === -1)).toBe(true);
    expect(skus.filter((s) => s.stock_status === 'out_of_stock').every((s) => s.stock_quantity === 0)).toBe(true);
    // Dujiao-Next: low_stock 1–20, in_stock above 20
    expect(skus.filter((s) => s.stock_status === 'low_stock').every((s) => s.stock_quantity > 0 && s.stock_quantity <= 20)).toBe(true);
    expect(skus.filter((s) => s.stock_status === 'in_stock').every((s) => s.stock_quantity > 20)).toBe(true);
    expect(skus.some((s) => !s.is_active)).toBe(true);
    expect(skus.some((s) => s.original_price !== undefined)).toBe(true);
    expect(skus.some((s) => s.member_price !== undefined)).toBe(true);
    expect(all.every((p) => p.skus.length >= 1 && p.skus.length <= 4)).toBe(true);
    const manual = all.filter((p) => p.fulfillment_type === 'manual');
    expect(manual.length).toBeGreaterThan(0);
    expect(manual.every((p) => p.manual_form_schema !== null)).toBe(true);
    expect(all.filter((p) => p.fulfillment_type === 'auto').every((p) => p.manual_form_schema === null)).toBe(true);
    for (const p of all) {
      expect(Object.keys(p.title).sort()).toEqual(['en', 'zh-CN']);
      expect(p.price_amount).toMatch(/^\d+\.\d{2}$/);
      expect(Date.parse(p.updated_at)).toBeGreaterThanOrEqual(Date.parse(p.created_at));
    }
  });

  it('has two levels of categories, each product in a child category', () => {
    const c = new SandboxCatalog(40, 1, fixedClock);
    const cats = c.categories();
    const top = cats.filter((x) => x.parent_id === 0);
    const children = cats.filter((x) => x.parent_id !== 0);
    expect(top.length).toBeGreaterThanOrEqual(3);
    expect(children.every((ch) => top.some((t) => t.id === ch.parent_id))).toBe(true);
    const childIds = new Set(children.map((x) => x.id));
    expect(pageAll(c, 50).every((p) => childIds.has(p.category_id))).toBe(true);
    expect(new Set(cats.map((x) => x.slug)).size).toBe(cats.length);
  });

  it('every mutator bumps the product updated_at and changes what is served', () => {
    let now = Date.UTC(2026, 0, 1);
    const c = new SandboxCatalog(40, 1, () => now);
    const found = c.findSku({ fulfillmentType: 'auto', stockStatus: 'in_stock' });
    if (!found) throw new Error('no in_stock SKU');
    const code = found.sku.sku_code;
    const updatedOf = (): number => Date.parse(c.getSku(code)!.product.updated_at);
    const before = updatedOf();

    c.setPrice(code, '123.45');
    expect(c.getSku(code)!.sku.price_amount).toBe('123.45');
    const t1 = updatedOf();
    expect(t1).toBeGreaterThan(before);

    c.setStock(code, 'low_stock', 3);
    expect(c.getSku(code)!.sku).toMatchObject({ stock_status: 'low_stock', stock_quantity: 3 });
    const t2 = updatedOf();
    expect(t2).toBeGreaterThan(t1); // strictly increasing even with a clock that stands still

    c.setSkuActive(code, false);
    expect(c.getSku(code)!.sku.is_active).toBe(false);
    c.setSkuActive(code, true);

    const oldId = found.sku.id;
    const newId = c.changeSkuId(code);
    expect(newId).not.toBe(oldId);
    expect(c.getSkuById(oldId)).toBeUndefined();
    expect(c.getSkuById(newId)!.sku.sku_code).toBe(code);

    now += 1000;
    c.delistProduct(found.product.id);
    expect(c.listedCount).toBe(39);
    expect(c.getProduct(found.product.id)!.is_active).toBe(false);
    c.relistProduct(found.product.id);
    expect(c.listedCount).toBe(40);
    expect(updatedOf()).toBeGreaterThanOrEqual(now);
  });

  it('products without specifications share the code DEFAULT, as on Dujiao-Next: each SKU is found by its product', () => {
    const c = new SandboxCatalog(5, 1, () => Date.UTC(2026, 0, 1));
    const a = c.addProduct({ skus: [{ skuCode: 'DEFAULT', price: '3.00' }] });
    const b = c.addProduct({ skus: [{ skuCode: 'DEFAULT', price: '4.00' }] });
    expect(a.id).not.toBe(b.id);
    expect(c.getSkuOf(a.id, 'DEFAULT')?.sku).toMatchObject({ id: a.skus[0].id, price_amount: '3.00' });
    expect(c.getSkuOf(b.id, 'DEFAULT')?.sku).toMatchObject({ id: b.skus[0].id, price_amount: '4.00' });
    expect(c.getSkuOf(a.id, 'MONTHLY')).toBeUndefined();
    // getSku(code) is the first carrying it; a mutator takes `<product id>:<code>` for another one
    expect(c.getSku('DEFAULT')?.product.id).toBe(a.id);
    c.setPrice(`${b.id}:DEFAULT`, '4.50');
    expect(c.getSkuOf(b.id, 'DEFAULT')?.sku.price_amount).toBe('4.50');
    expect(c.getSkuOf(a.id, 'DEFAULT')?.sku.price_amount).toBe('3.00');
  });

  it('removes one SKU from a product that keeps its others, never its last one', () => {
    const c = new SandboxCatalog(40, 1, () => Date.UTC(2026, 0, 1));
    const product = c.listedProducts().find((p) => p.skus.length >= 2)!;
    const [gone, kept] = product.skus;
    const skus = c.skuCount;
    c.removeSku(gone.sku_code);
    expect(c.getSku(gone.sku_code)).toBeUndefined();
    expect(c.getSkuById(gone.id)).toBeUndefined();
    expect(c.skuCount).toBe(skus - 1);
    const served = c.getProduct(product.id)!;
    expect(served.skus.map((s) => s.sku_code)).not.toContain(gone.sku_code);
    expect(served.skus.map((s) => s.sku_code)).toContain(kept.sku_code);
    expect(Date.parse(served.updated_at)).toBeGreaterThan(Date.parse(product.updated_at));
    const single = c.listedProducts().find((p) => p.skus.length === 1)!;
    expect(() => c.removeSku(single.skus[0].sku_code)).toThrow(RangeError);
  });

  it('adds products at the end, inserts at the front, duplicates a sku_code, touches n products', () => {
    const c = new SandboxCatalog(40, 1, fixedClock);
    const added = c.addProduct({ skus: [{ price: '9.99', stockQuantity: 4 }] });
    expect(added.id).toBe(41);
    expect(added.skus[0]).toMatchObject({ price_amount: '9.99', stock_status: 'low_stock', stock_quantity: 4 });
    expect(pageAll(c, 50).at(-1)!.id).toBe(41);

    const front = c.insertAtFront();
    const front2 = c.insertAtFront();
    const listing = pageAll(c, 50);
    expect(listing[0].id).toBe(front2.id);
    expect(listing[1].id).toBe(front.id);
    expect(listing).toHaveLength(43);

    const code = listing[5].skus[0].sku_code;
    const dup = c.duplicateSkuCode(code);
    const holders = pageAll(c, 50).filter((p) => p.skus.some((s) => s.sku_code === code));
    expect(holders.map((p) => p.id).sort()).toEqual([listing[5].id, dup.productId].sort());

    const cutoff = Math.max(...pageAll(c, 50).map((p) => Date.parse(p.updated_at)));
    const touched = c.touchProducts(5);
    expect(new Set(touched).size).toBe(5);
    const changed = pageAll(c, 50, cutoff);
    expect(changed.map((p) => p.id).sort((a, b) => a - b)).toEqual([...touched].sort((a, b) => a - b));
  });

  it('names stock as Dujiao-Next does: out_of_stock at 0, low_stock 1–20, in_stock above 20, unlimited at -1', () => {
    expect(LOW_STOCK_THRESHOLD).toBe(20);
    expect([-1, 0, 1, 10, 11, 20, 21, 1000].map((q) => [q, stockStatusFor(q)])).toEqual([
      [-1, 'unlimited'],
      [0, 'out_of_stock'],
      [1, 'low_stock'],
      [10, 'low_stock'],
      [11, 'low_stock'],
      [20, 'low_stock'],
      [21, 'in_stock'],
      [1000, 'in_stock'],
    ]);
    const c = new SandboxCatalog(40, 1, fixedClock);
    const rec = c.skuRecord(c.addProduct({ skus: [{ stockQuantity: 21 }] }).skus[0].id)!;
    expect(rec.stockStatus).toBe('in_stock');
    c.takeStock(rec, 1);
    expect(c.getSkuById(rec.id)!.sku).toMatchObject({ stock_status: 'low_stock', stock_quantity: 20 });
  });

  it('leaves inactive SKUs out of what it serves when told to (profile dujiao-next), the helpers still show them', () => {
    const full = new SandboxCatalog(40, 1, fixedClock);
    const lean = new SandboxCatalog(40, 1, fixedClock, false);
    const fullPages = pageAll(full, 50);
    const leanPages = pageAll(lean, 50);
    // the same products, in the same order, each with its active SKUs only
    expect(leanPages.map((p) => p.id)).toEqual(fullPages.map((p) => p.id));
    expect(leanPages).toEqual(fullPages.map((p) => ({ ...p, skus: p.skus.filter((s) => s.is_active) })));
    expect(fullPages.some((p) => p.skus.some((s) => !s.is_active))).toBe(true);
    expect(leanPages.every((p) => p.skus.every((s) => s.is_active))).toBe(true);

    const inactive = lean.findSku({ active: false })!;
    expect(inactive.sku.is_active).toBe(false);
    expect(inactive.product.skus.map((s) => s.id)).toContain(inactive.sku.id);
    expect(lean.getProduct(inactive.product.id)!.skus.map((s) => s.id)).toContain(inactive.sku.id);
    const served = (): SandboxProduct => JSON.parse(lean.productJson(lean.productRecord(inactive.product.id)!)) as SandboxProduct;
    expect(served().skus.map((s) => s.id)).not.toContain(inactive.sku.id);
    // activating it serves it again (a change of the product: updated_at moves)
    const before = served().updated_at;
    lean.setSkuActive(inactive.sku.sku_code, true);
    expect(served().skus.find((s) => s.id === inactive.sku.id)).toMatchObject({ is_active: true });
    expect(Date.parse(served().updated_at)).toBeGreaterThan(Date.parse(before));
    lean.setSkuActive(inactive.sku.sku_code, false);
    expect(served().skus.map((s) => s.id)).not.toContain(inactive.sku.id);
  });

  it('takes and gives back finite stock, leaving unlimited stock alone', () => {
    const c = new SandboxCatalog(40, 1, fixedClock);
    const found = c.findSku({ stockStatus: 'in_stock' })!;
    const rec = c.skuRecord(found.sku.id)!;
    const start = rec.stockQuantity;
    c.takeStock(rec, start);
    expect(c.getSkuById(found.sku.id)!.sku).toMatchObject({ stock_status: 'out_of_stock', stock_quantity: 0 });
    c.returnStock(found.sku.id, 2);
    expect(c.getSkuById(found.sku.id)!.sku).toMatchObject({ stock_status: 'low_stock', stock_quantity: 2 });
    const unlimited = c.skuRecord(c.findSku({ stockStatus: 'unlimited' })!.sku.id)!;
    c.takeStock(unlimited, 1000);
    expect(unlimited.stockQuantity).toBe(-1);
  });
});
