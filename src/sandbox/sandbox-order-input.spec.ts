import { ApiError } from './sandbox-http.js';
import { dujiaoManualFormProblem, missingRequiredFields, validateCreate } from './sandbox-order-input.js';

function refusal(body: unknown, maxQuantity = 100): string {
  try {
    validateCreate(body, maxQuantity);
  } catch (e) {
    if (e instanceof ApiError) return `${e.status} ${e.code}: ${e.message}`;
    throw e;
  }
  throw new Error('accepted');
}

describe('validateCreate', () => {
  it('keeps the known fields, and leaves out the optional ones sent empty or null', () => {
    expect(
      validateCreate(
        { sku_id: 7, quantity: 2, manual_form_data: { a: 1 }, downstream_order_no: 'SO-1', trace_id: 't', callback_url: 'x', other: 1 },
        10,
      ),
    ).toEqual({ sku_id: 7, quantity: 2, manual_form_data: { a: 1 }, downstream_order_no: 'SO-1', trace_id: 't', callback_url: 'x' });
    expect(validateCreate({ sku_id: 1, quantity: 1, manual_form_data: null, downstream_order_no: '', trace_id: null }, 1)).toEqual({
      sku_id: 1,
      quantity: 1,
    });
  });

  it('refuses a bad body with 400 bad_request naming the field', () => {
    expect(refusal([])).toBe('400 bad_request: the body must be a JSON object');
    expect(refusal({ sku_id: 0, quantity: 1 })).toBe('400 bad_request: sku_id must be an integer >= 1');
    expect(refusal({ sku_id: 1, quantity: 1.5 })).toBe('400 bad_request: quantity must be an integer >= 1');
    expect(refusal({ sku_id: 1, quantity: 11 }, 10)).toBe('400 bad_request: quantity must be at most 10');
    expect(refusal({ sku_id: 1, quantity: 1, manual_form_data: [] })).toBe('400 bad_request: manual_form_data must be an object');
    expect(refusal({ sku_id: 1, quantity: 1, downstream_order_no: 'x'.repeat(129) })).toBe(
      '400 bad_request: downstream_order_no must be a string of at most 128 characters',
    );
    expect(refusal({ sku_id: 1, quantity: 1, trace_id: 5 })).toBe('400 bad_request: trace_id must be a string of at most 256 characters');
    expect(refusal({ sku_id: 1, quantity: 1, callback_url: 5 })).toBe('400 bad_request: callback_url must be a string');
  });
});

describe('the manual form', () => {
  const schema = {
    fields: [
      { key: 'email', required: true },
      { key: 'note', required: false },
    ],
  };

  it('lists the required fields absent, null or empty; a schema without a fields list requires nothing', () => {
    expect(missingRequiredFields(schema, {})).toEqual(['email']);
    expect(missingRequiredFields(schema, { email: '' })).toEqual(['email']);
    expect(missingRequiredFields(schema, { email: null })).toEqual(['email']);
    expect(missingRequiredFields(schema, { email: 'a@b.c' })).toEqual([]);
    expect(missingRequiredFields({ fields: 'nope' }, {})).toEqual([]);
    expect(missingRequiredFields(null, {})).toEqual([]);
  });

  it('judges the data as Dujiao-Next does: a key the schema does not list, then a required field missing', () => {
    expect(dujiaoManualFormProblem(schema, { email: 'a@b.c', note: 'x' })).toBeNull();
    expect(dujiaoManualFormProblem(schema, { email: 'a@b.c', other: 1 })).toBe('manual form field invalid');
    expect(dujiaoManualFormProblem(schema, undefined)).toBe('manual form required missing');
    expect(dujiaoManualFormProblem({ fields: [] }, undefined)).toBeNull();
    expect(dujiaoManualFormProblem(null, { any: 1 })).toBe('manual form field invalid');
  });
});
