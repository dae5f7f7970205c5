import { codeOfKey, parseSkuKey, resolveSkuRef, skuKeyOf } from './sku-key.js';

const sku = (productId: number, code: string, listed = true) => ({ sku_key: skuKeyOf(productId, code), sku_code: code, listed });

describe('sku-key', () => {
  it('a key is <product id>:<sku_code>; the code may hold a colon itself', () => {
    expect(skuKeyOf(12, 'DEFAULT')).toBe('12:DEFAULT');
    expect(parseSkuKey('12:DEFAULT')).toEqual({ productId: 12, skuCode: 'DEFAULT' });
    expect(parseSkuKey('12:A:B')).toEqual({ productId: 12, skuCode: 'A:B' });
    expect(codeOfKey('12:A:B')).toBe('A:B');
  });

  it.each(['DEFAULT', ':DEFAULT', '12:', 'x12:A', '012:A', '99999999999999999999:A'])('%s has no key form', (ref) => {
    expect(parseSkuKey(ref)).toBeNull();
    expect(codeOfKey(ref)).toBe(ref);
  });

  it('a key names its SKU, listed or not', () => {
    const rows = [sku(1, 'DEFAULT'), sku(2, 'DEFAULT', false)];
    expect(resolveSkuRef('2:DEFAULT', rows)).toEqual({ kind: 'found', sku: rows[1] });
  });

  it('a code carried by one SKU names it (listed or not), as a catalog of unique codes always did', () => {
    expect(resolveSkuRef('A', [sku(1, 'A')])).toMatchObject({ kind: 'found', sku: { sku_key: '1:A' } });
    expect(resolveSkuRef('A', [sku(1, 'A', false)])).toMatchObject({ kind: 'found', sku: { sku_key: '1:A' } });
    expect(resolveSkuRef('A', [])).toEqual({ kind: 'not_found' });
  });

  it('a code carried by several listed SKUs is ambiguous, never a guess; unlisted ones do not count', () => {
    expect(resolveSkuRef('DEFAULT', [sku(3, 'DEFAULT'), sku(10, 'DEFAULT'), sku(2, 'DEFAULT', false)])).toEqual({
      kind: 'ambiguous',
      candidates: ['10:DEFAULT', '3:DEFAULT'],
      listed: true,
    });
    expect(resolveSkuRef('DEFAULT', [sku(3, 'DEFAULT', false), sku(10, 'DEFAULT')])).toMatchObject({
      kind: 'found',
      sku: { sku_key: '10:DEFAULT' },
    });
  });

  it('a code carried only by several unlisted SKUs is ambiguous among them', () => {
    expect(resolveSkuRef('M', [sku(3, 'M', false), sku(4, 'M', false)])).toEqual({
      kind: 'ambiguous',
      candidates: ['3:M', '4:M'],
      listed: false,
    });
  });

  it("a code that has the form of another SKU's key: the key wins", () => {
    const rows = [sku(5, '7:X'), sku(7, 'X')];
    expect(resolveSkuRef('7:X', rows)).toMatchObject({ kind: 'found', sku: { sku_key: '7:X' } });
    expect(resolveSkuRef('5:7:X', rows)).toMatchObject({ kind: 'found', sku: { sku_key: '5:7:X' } });
  });

  describe('several suppliers', () => {
    const at = (supplier: string, productId: number, code: string, listed = true) => ({ ...sku(productId, code, listed), supplier });

    it('a key or code several suppliers carry is ambiguous, the candidates named {supplier, sku_key}', () => {
      const rows = [at('second', 1, 'DEFAULT'), at('main', 1, 'DEFAULT')];
      const ambiguous = {
        kind: 'ambiguous',
        candidates: [
          { supplier: 'main', sku_key: '1:DEFAULT' },
          { supplier: 'second', sku_key: '1:DEFAULT' },
        ],
        listed: true,
      };
      expect(resolveSkuRef('1:DEFAULT', rows)).toEqual(ambiguous);
      expect(resolveSkuRef('DEFAULT', rows)).toEqual(ambiguous);
    });

    it("one supplier's rows alone resolve as before; an unlisted one (a deleted supplier's) does not count", () => {
      const rows = [at('main', 1, 'DEFAULT'), at('second', 1, 'DEFAULT', false)];
      expect(resolveSkuRef('1:DEFAULT', rows)).toEqual({ kind: 'found', sku: rows[0] });
      expect(resolveSkuRef('1:DEFAULT', [rows[1]])).toEqual({ kind: 'found', sku: rows[1] });
      expect(resolveSkuRef('DEFAULT', [at('main', 1, 'DEFAULT'), at('main', 2, 'DEFAULT')])).toMatchObject({
        candidates: ['1:DEFAULT', '2:DEFAULT'],
      });
    });
  });
});
