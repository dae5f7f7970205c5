import { downstreamOrderNo, missingManualFields, requestFingerprint } from './order-request.js';

describe('order request', () => {
  const base = { shop_order_no: 'S-1', sku_code: 'SKU-1', quantity: 2 };

  it('fingerprints the body: same content same print, whatever the key order, money form or trace id', () => {
    const a = requestFingerprint({ ...base, manual_form_data: { a: 1, b: { c: 2, d: 3 } }, max_unit_cost: '10.5', trace_id: 't1' });
    const b = requestFingerprint({ ...base, manual_form_data: { b: { d: 3, c: 2 }, a: 1 }, max_unit_cost: '10.50', trace_id: 't2' });
    expect(a).toBe(b);
    expect(requestFingerprint({ ...base, quantity: 3 })).not.toBe(requestFingerprint(base));
    expect(requestFingerprint({ ...base, sku_code: 'SKU-2' })).not.toBe(requestFingerprint(base));
    expect(requestFingerprint({ ...base, max_unit_cost: '1' })).not.toBe(requestFingerprint(base));
  });

  it('fingerprints the supplier when the body names one, and a body without it as it always was', () => {
    expect(requestFingerprint({ ...base, supplier: 'second' })).not.toBe(requestFingerprint({ ...base, supplier: 'main' }));
    expect(requestFingerprint({ ...base, supplier: 'main' })).not.toBe(requestFingerprint(base));
    // the print of orders recorded before suppliers existed
    expect(requestFingerprint(base)).toBe('a141a670b36aedfba3d788edc7a3f28987eb1bd638be10949d08da91048b0ec8');
  });

  it('numbers attempts: the shop number first, then <no>-<n>', () => {
    expect(downstreamOrderNo('S-1', 1)).toBe('S-1');
    expect(downstreamOrderNo('S-1', 2)).toBe('S-1-2');
    expect(downstreamOrderNo('S-1', 12)).toBe('S-1-12');
  });

  it('finds the required manual form fields that are missing', () => {
    const schema = {
      fields: [
        { key: 'account', required: true },
        { key: 'region', required: false },
      ],
    };
    expect(missingManualFields(schema, {})).toEqual(['account']);
    expect(missingManualFields(schema, { account: '' })).toEqual(['account']);
    expect(missingManualFields(schema, { account: 'x' })).toEqual([]);
    expect(missingManualFields(null, {})).toEqual([]);
    expect(missingManualFields({ fields: 'nope' }, {})).toEqual([]);
  });
});
