import { mergeItems, withoutItems, type DeliveredItems } from './item-merge.js';

const d = (items: string[], delivery_data: Record<string, unknown> | null = null): DeliveredItems => ({ items, delivery_data });

describe('withoutItems', () => {
  it('is a multiset difference: an item missing twice is listed twice', () => {
    expect(withoutItems(['a', 'b', 'a', 'c'], ['a', 'c'])).toEqual(['b', 'a']);
    expect(withoutItems(['a'], ['a', 'a'])).toEqual([]);
  });
});

describe('mergeItems', () => {
  it('stores the report as it is when nothing is stored (or the stored items cannot be opened)', () => {
    expect(mergeItems(null, d(['a']))).toEqual({ kind: 'store', data: d(['a']), kept: 0, storedCount: 0 });
    expect(mergeItems(null, d([]))).toEqual({ kind: 'store', data: d([]), kept: 0, storedCount: 0 });
  });

  it('takes a report that has every stored item as it is', () => {
    expect(mergeItems(d(['a']), d(['a', 'b'], { k: 1 }))).toEqual({
      kind: 'store',
      data: d(['a', 'b'], { k: 1 }),
      kept: 0,
      storedCount: 1,
    });
  });

  it('keeps the stored items a report lacks and adds its new ones after them', () => {
    expect(mergeItems(d(['a', 'b']), d(['b', 'c']))).toEqual({ kind: 'store', data: d(['a', 'b', 'c']), kept: 1, storedCount: 2 });
    // duplicates count: two stored `a`, one reported, one kept
    expect(mergeItems(d(['a', 'a']), d(['a', 'z']))).toEqual({ kind: 'store', data: d(['a', 'a', 'z']), kept: 1, storedCount: 2 });
  });

  it("keeps the stored delivery data when a report lacking items brings none, and takes the report's when it does", () => {
    expect(mergeItems(d(['a'], { code: 'x' }), d(['b']))).toMatchObject({ kind: 'store', data: d(['a', 'b'], { code: 'x' }) });
    expect(mergeItems(d(['a'], { code: 'x' }), d(['b'], { code: 'y' }))).toMatchObject({
      kind: 'store',
      data: d(['a', 'b'], { code: 'y' }),
    });
  });

  it('writes nothing when the merge equals what is stored, still counting what a stale report lacked', () => {
    expect(mergeItems(d(['a', 'b']), d(['a', 'b']))).toEqual({ kind: 'unchanged', kept: 0, storedCount: 2 });
    expect(mergeItems(d(['a', 'b'], { code: 'x' }), d([]))).toEqual({ kind: 'unchanged', kept: 2, storedCount: 2 });
  });
});
