import type { StoredSku } from '../catalog/catalog.records.js';
import type { UpstreamProduct, UpstreamSku } from '../upstream/upstream.types.js';
import { ORDER_STATUSES } from './order-state.js';
import {
  aboveCeiling,
  canResubmit,
  checkFreshSku,
  checkSameRequest,
  checkSupplierOpen,
  checkLocalSku,
  checkPrice,
  checkQuantity,
  expectedAmount,
  overcharge,
  pickSupplier,
  placeAnswer,
  priceCeiling,
  priceReadFailureRoute,
  refusalCode,
  sameAmount,
  type LocalSkuFacts,
  type SupplierSku,
} from './place-plan.js';

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

describe('who may make a new attempt', () => {
  it('only a rejected order, not once refunded, not while the upstream showed an order for a closed attempt', () => {
    expect(canResubmit({ status: 'rejected', refundRecorded: false, anomaly: null })).toBe(true);
    expect(canResubmit({ status: 'rejected', refundRecorded: true, anomaly: null })).toBe(false);
    expect(canResubmit({ status: 'rejected', refundRecorded: false, anomaly: 'upstream_order_exists' })).toBe(false);
    for (const s of ORDER_STATUSES.filter((x) => x !== 'rejected'))
      expect(canResubmit({ status: s, refundRecorded: false, anomaly: null })).toBe(false);
  });

  it('a recorded number with another body is 409 idempotency_conflict; the same body passes', () => {
    const order = { shopOrderNo: 'S-1', requestFingerprint: 'f1' };
    expect(checkSameRequest(order, 'f1')).toBeNull();
    expect(checkSameRequest(order, 'f2')).toEqual({
      code: 'idempotency_conflict',
      message: 'order S-1 was recorded with another request body',
      extra: {},
    });
  });

  it('a new attempt at a disabled supplier is 409 supplier_disabled, unless the offer route refused that source already', () => {
    expect(checkSupplierOpen('second', true, false)).toBeNull();
    expect(checkSupplierOpen('second', false, false)).toEqual({
      code: 'supplier_disabled',
      message: 'supplier second is disabled: it takes no new orders',
      extra: { supplier: 'second' },
    });
    expect(checkSupplierOpen('second', false, true)).toBeNull();
  });
});

const local = (over: Partial<LocalSkuFacts> = {}): LocalSkuFacts => ({
  available: true,
  fulfillmentType: 'auto',
  manualFormSchema: null,
  ...over,
});
const form = { fields: [{ key: 'account', required: true }, { key: 'note' }] };

describe('checkQuantity', () => {
  it('refuses a quantity above the maximum as a bad request naming the field', () => {
    expect(checkQuantity(10, 10)).toBeNull();
    expect(checkQuantity(11, 10)).toEqual({
      code: 'bad_request',
      message: 'invalid request: quantity',
      extra: { fields: { quantity: ['quantity must not be greater than 10'] } },
    });
  });
});

describe('checkLocalSku', () => {
  it('passes an available SKU on, itself', () => {
    const sku = local();
    expect(checkLocalSku('A', sku, undefined)).toEqual({ sku });
  });

  it('refuses a missing SKU (sku_not_found) and an unavailable one (sku_unavailable)', () => {
    expect(checkLocalSku('A', null, undefined)).toEqual({ refusal: { code: 'sku_not_found', message: 'no SKU A', extra: {} } });
    expect(checkLocalSku('A', local({ available: false }), undefined)).toMatchObject({ refusal: { code: 'sku_unavailable' } });
    // unavailability is judged before the form
    expect(checkLocalSku('A', local({ available: false, fulfillmentType: 'manual', manualFormSchema: form }), undefined)).toMatchObject({
      refusal: { code: 'sku_unavailable' },
    });
  });

  it("refuses a manual SKU's form without its required fields (manual_form_required), then keys the form lacks (bad_request)", () => {
    const manual = local({ fulfillmentType: 'manual', manualFormSchema: form });
    expect(checkLocalSku('A', manual, { note: 'x' })).toEqual({
      refusal: {
        code: 'manual_form_required',
        message: 'SKU A is fulfilled manually: its form needs account',
        extra: { fields: { 'manual_form_data.account': ['required'] } },
      },
    });
    expect(checkLocalSku('A', manual, { account: 'me', color: 'red' })).toEqual({
      refusal: {
        code: 'bad_request',
        message: "invalid request: manual_form_data has keys the product's form does not have (color)",
        extra: { fields: { 'manual_form_data.color': ["not a field of the product's form"] } },
      },
    });
    expect(checkLocalSku('A', manual, { account: 'me' })).toEqual({ sku: manual });
  });

  it('does not judge the form of an SKU that is not manual, nor a manual one whose product has no form', () => {
    expect(checkLocalSku('A', local({ manualFormSchema: form }), { color: 'red' })).toHaveProperty('sku');
    expect(checkLocalSku('A', local({ fulfillmentType: 'manual' }), undefined)).toHaveProperty('sku');
  });
});

describe('checkFreshSku', () => {
  const sku = (over: Partial<UpstreamSku> = {}): UpstreamSku =>
    ({ id: 5, sku_code: 'S', is_active: true, stock_status: 'in_stock', price_amount: '1.00', ...over }) as UpstreamSku;
  const product = (over: Partial<UpstreamProduct> = {}, skus = [sku()]): UpstreamProduct =>
    ({ id: 9, is_active: true, skus, ...over }) as UpstreamProduct;

  it('passes the product and the SKU it carries, active and in stock', () => {
    const p = product();
    expect(checkFreshSku('ref', 'S', p)).toEqual({ product: p, sku: p.skus[0] });
  });

  it('refuses as sku_unavailable a product gone, inactive, without the SKU, or the SKU inactive or out of stock', () => {
    const refused = { refusal: { code: 'sku_unavailable', message: 'SKU ref is no longer available upstream', extra: {} } };
    expect(checkFreshSku('ref', 'S', null)).toEqual(refused);
    expect(checkFreshSku('ref', 'S', product({ is_active: false }))).toEqual(refused);
    expect(checkFreshSku('ref', 'S', product({}, [sku({ sku_code: 'T' })]))).toEqual(refused);
    expect(checkFreshSku('ref', 'S', product({}, [sku({ is_active: false })]))).toEqual(refused);
    expect(checkFreshSku('ref', 'S', product({}, [sku({ stock_status: 'out_of_stock' })]))).toEqual(refused);
  });
});

describe('checkPrice', () => {
  it('refuses a unit cost above the ceiling as price_changed with both amounts; the ceiling itself passes', () => {
    expect(checkPrice('10.00', '10')).toBeNull();
    expect(checkPrice('10.01', '10.00')).toEqual({
      code: 'price_changed',
      message: 'the unit price is now 10.01, above 10.00',
      extra: { unit_cost: '10.01', max_unit_cost: '10.00' },
    });
  });
});

describe('priceCeiling', () => {
  it('is the max_unit_cost when the shop sent one, even below the known sale price', () => {
    expect(priceCeiling('9.00', '12.00')).toBe('9.00');
    expect(priceCeiling('15.00', '12.00')).toBe('15.00');
  });

  it('defaults to the sale price known before the fresh read', () => {
    expect(priceCeiling(undefined, '12.00')).toBe('12.00');
    expect(priceCeiling(null, '12.00')).toBe('12.00');
  });

  it('is 0 when neither is known', () => {
    expect(priceCeiling(undefined, undefined)).toBe('0');
    expect(priceCeiling(null, null)).toBe('0');
  });
});

describe('aboveCeiling (the price guard)', () => {
  it.each([
    // unit cost, ceiling, refused
    ['12.00', '12.00', false],
    ['12', '12.000', false],
    ['12.01', '12.00', true],
    ['11.99', '12.00', false],
    ['12.000000000000000000000000001', '12', true], // beyond a JavaScript number's digits
    ['99999999999999999999.99', '99999999999999999999.98', true],
    ['0.00', '0', false],
  ])('%s against %s: %s', (unitCost, ceiling, refused) => {
    expect(aboveCeiling(unitCost, ceiling)).toBe(refused);
  });
});

describe('expectedAmount', () => {
  it.each([
    // unit cost, quantity, expected
    ['10.00', 2, '20.00'],
    ['10', 3, '30'],
    ['0.10', 3, '0.30'], // 0.1 × 3 is exact, not 0.30000000000000004
    ['1.005', 7, '7.035'],
    ['12345678901234567890.12', 1000, '12345678901234567890120.00'], // more digits than a default Decimal keeps
    ['0.00', 5, '0.00'],
  ])('%s × %d = %s', (unitCost, quantity, expected) => {
    expect(expectedAmount(unitCost, quantity)).toBe(expected);
  });
});

describe('overcharge', () => {
  it('is the expected amount when the charge is above it', () => {
    expect(overcharge('22.00', '10.00', 2)).toEqual({ expected: '20.00' });
    expect(overcharge('20.01', '10.00', 2)).toEqual({ expected: '20.00' });
  });

  it('is null for a charge equal to or below the expected amount, whatever its scale', () => {
    expect(overcharge('20.00', '10.00', 2)).toBeNull();
    expect(overcharge('20', '10.00', 2)).toBeNull();
    expect(overcharge('19.99', '10.00', 2)).toBeNull();
  });

  it('is null when the charge or the checked unit cost is unknown', () => {
    expect(overcharge(undefined, '10.00', 2)).toBeNull();
    expect(overcharge(null, '10.00', 2)).toBeNull();
    expect(overcharge('', '10.00', 2)).toBeNull();
    expect(overcharge('22.00', null, 2)).toBeNull();
  });
});

describe('sameAmount', () => {
  it('compares as numbers, not as text', () => {
    expect(sameAmount('20', '20.00')).toBe(true);
    expect(sameAmount('20.00', '20.01')).toBe(false);
  });

  it('takes two absent amounts as the same and one absent as different', () => {
    expect(sameAmount(null, undefined)).toBe(true);
    expect(sameAmount(null, null)).toBe(true);
    expect(sameAmount('0', null)).toBe(false);
    expect(sameAmount(undefined, '0')).toBe(false);
  });
});

describe('priceReadFailureRoute', () => {
  it('a read that reached nothing for the budget or a 429 defers a placement that may be queued', () => {
    expect(priceReadFailureRoute({ budgetWaitExceeded: true, rateLimited: false }, true)).toBe('defer');
    expect(priceReadFailureRoute({ budgetWaitExceeded: false, rateLimited: true }, true)).toBe('defer');
  });

  it('any other failure, or a placement that cannot be queued, is unavailable', () => {
    expect(priceReadFailureRoute({ budgetWaitExceeded: false, rateLimited: false }, true)).toBe('unavailable');
    expect(priceReadFailureRoute({ budgetWaitExceeded: true, rateLimited: false }, false)).toBe('unavailable');
    expect(priceReadFailureRoute({ budgetWaitExceeded: false, rateLimited: true }, false)).toBe('unavailable');
  });
});

const order = (status: string, errorMessage: string | null = null) => ({ status, errorMessage });
const refused = (errorCode: string, httpStatus: number) => ({ kind: 'rejected' as const, errorCode, httpStatus, message: 'no' });

describe('placeAnswer', () => {
  it('202 for an unknown outcome and a queued order; 201 for an upstream state', () => {
    expect(placeAnswer(order('submit_unknown'), { kind: 'unknown' })).toEqual({ kind: 'ok', httpStatus: 202 });
    expect(placeAnswer(order('queued'), { kind: 'queued' })).toEqual({ kind: 'ok', httpStatus: 202 });
    for (const s of ['pending_payment', 'paid', 'delivered', 'completed'])
      expect(placeAnswer(order(s), { kind: 'accepted' })).toEqual({ kind: 'ok', httpStatus: 201 });
  });

  it('a status not known, still submitting: 201 when accepted, else 202', () => {
    expect(placeAnswer(order('submitting'), { kind: 'accepted' })).toEqual({ kind: 'ok', httpStatus: 201 });
    expect(placeAnswer(order('submitting'), { kind: 'unknown' })).toEqual({ kind: 'ok', httpStatus: 202 });
  });

  it(
    "a refusal: the upstream's code and status; 401/403 are 502 upstream_auth_failed; " +
      'an ok:false answered 200 is 402 payment_failed or 502',
    () => {
      expect(placeAnswer(order('rejected'), refused('insufficient_balance', 402))).toEqual({
        kind: 'error',
        code: 'insufficient_balance',
        httpStatus: 402,
        message: 'the upstream refused the order: no',
        upstream: true,
      });
      for (const s of [401, 403])
        expect(placeAnswer(order('rejected'), refused('invalid_signature', s))).toMatchObject({
          code: 'upstream_auth_failed',
          httpStatus: 502,
          upstream: false,
        });
      expect(placeAnswer(order('rejected'), refused('payment_failed', 200))).toMatchObject({ code: 'payment_failed', httpStatus: 402 });
      expect(placeAnswer(order('rejected'), refused('sku_disabled', 200))).toMatchObject({ code: 'sku_disabled', httpStatus: 502 });
    },
  );

  it("nothing reached the upstream: 503 upstream_unavailable with the order's message", () => {
    expect(placeAnswer(order('rejected', 'the upstream could not be reached (ECONNREFUSED)'), { kind: 'unavailable' })).toEqual({
      kind: 'error',
      code: 'upstream_unavailable',
      httpStatus: 503,
      message: 'the upstream could not be reached (ECONNREFUSED)',
      upstream: false,
    });
    expect(placeAnswer(order('rejected'), { kind: 'unavailable' })).toMatchObject({ message: 'the upstream could not be reached' });
  });
});

describe('refusalCode', () => {
  it('names a 401/403 upstream_auth_failed whatever the upstream called it, else keeps the upstream code', () => {
    expect(refusalCode({ errorCode: 'invalid_signature', httpStatus: 401 })).toBe('upstream_auth_failed');
    expect(refusalCode({ errorCode: 'forbidden', httpStatus: 403 })).toBe('upstream_auth_failed');
    expect(refusalCode({ errorCode: 'insufficient_stock', httpStatus: 409 })).toBe('insufficient_stock');
    expect(refusalCode({ errorCode: 'payment_failed', httpStatus: 200 })).toBe('payment_failed');
  });
});
