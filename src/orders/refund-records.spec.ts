import { normalizeRefundRecords } from './refund-records.js';

describe('refund records of an upstream order detail', () => {
  it('keeps each refund in one shape: two-place decimal strings, UTC times', () => {
    expect(
      normalizeRefundRecords([
        {
          id: 1,
          order_id: 100231,
          type: 'wallet',
          amount: '5',
          currency: 'CNY',
          remark: '',
          created_at: '2026-11-27T18:02:03.123456789+08:00',
          user_id: 7,
        },
        { id: 2, order_id: 100232, type: 'manual', amount: 1.5, currency: 'CNY', remark: 'goodwill', created_at: 'not a time' },
      ]),
    ).toEqual([
      { upstream_order_id: 100231, type: 'wallet', amount: '5.00', currency: 'CNY', remark: null, created_at: '2026-11-27T10:02:03.123Z' },
      { upstream_order_id: 100232, type: 'manual', amount: '1.50', currency: 'CNY', remark: 'goodwill', created_at: null },
    ]);
  });

  it('leaves out an entry without a usable amount; no list is undefined, an empty one is empty', () => {
    expect(normalizeRefundRecords([{ amount: 'x' }, { amount: '-1' }, null, 'r', { amount: '2.00' }])).toEqual([
      { upstream_order_id: null, type: null, amount: '2.00', currency: null, remark: null, created_at: null },
    ]);
    expect(normalizeRefundRecords(undefined)).toBeUndefined();
    expect(normalizeRefundRecords(null)).toBeUndefined();
    expect(normalizeRefundRecords({})).toBeUndefined();
    expect(normalizeRefundRecords([])).toEqual([]);
  });
});
