import type { UpstreamProduct, UpstreamSku } from '../upstream/upstream.types.js';
import { checkFreshSku, checkLocalSku, checkPrice, checkQuantity, type LocalSkuFacts } from './presend-checks.js';

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
