/**
 * OpenAPI schemas and examples of the pricing rules' internal API (`GET/PUT /internal/pricing/rules`,
 * CONTRACT §5), exactly as `catalog.responses.ts` and PricingController answer.
 */
import type { SchemaObject } from '@nestjs/swagger';
import { apiError, dateTimeSchema, decimalSchema, objectSchema, okSchema } from '../ops/api-docs.js';
import { SKU_AMBIGUOUS } from './catalog.api-examples.js';

const nullableString = (description?: string): SchemaObject => ({
  type: 'string',
  nullable: true,
  ...(description ? { description } : {}),
});
const count = (description?: string): SchemaObject => ({ type: 'integer', minimum: 0, ...(description ? { description } : {}) });

const MARKUPS: Record<string, SchemaObject> = {
  markup_percent: decimalSchema('percent added to the cost'),
  markup_fixed: decimalSchema('amount added after the percent'),
};
export const PRICING_RULES_SCHEMA: SchemaObject = okSchema(
  {
    defaults: objectSchema(
      { ...MARKUPS, rounding: decimalSchema('rounding step (PRICE_ROUNDING)') },
      [],
      'PRICE_MARKUP_PERCENT, PRICE_MARKUP_FIXED, PRICE_ROUNDING',
    ),
    rules: {
      type: 'array',
      items: objectSchema({
        scope: { type: 'string', enum: ['supplier', 'category', 'sku'] },
        supplier: nullableString('the supplier the rule is about; null for a SKU rule by a code alone (any supplier)'),
        category_id: { type: 'integer', nullable: true },
        sku_code: nullableString("scope `sku`: the SKU's code"),
        sku_key: nullableString(
          "scope `sku`: the SKU's key; null for a rule set by a `sku_code` that no SKU carried then (it applies to the " +
            'SKUs carrying that code)',
        ),
        ...MARKUPS,
        rounding: decimalSchema('rounding step; null: the default', true),
        updated_at: dateTimeSchema(undefined, true),
      }),
    },
    version: { type: 'integer', description: 'bumped by every change of the rules' },
    repriced: count('PUT only: the SKUs whose sale price changed'),
  },
  ['repriced'],
);

export const PUT_RULES_EXAMPLE = {
  rules: [
    { scope: 'category', category_id: 1, markup_percent: '12.5', markup_fixed: '0.50', rounding: '0.1' },
    { scope: 'sku', sku_code: '42:SKU-00042-1', markup_percent: '0', markup_fixed: '2.80' },
  ],
};

const RULES_DEFAULTS = { markup_percent: '10', markup_fixed: '0', rounding: '0.01' };
export const RULES_EXAMPLE = {
  ok: true,
  defaults: RULES_DEFAULTS,
  rules: [
    {
      scope: 'category',
      supplier: 'main',
      category_id: 1,
      sku_code: null,
      sku_key: null,
      markup_percent: '12.5',
      markup_fixed: '0.50',
      rounding: '0.1',
      updated_at: '2026-11-20T08:00:00.000Z',
    },
    {
      scope: 'sku',
      supplier: 'main',
      category_id: null,
      sku_code: 'SKU-00042-1',
      sku_key: '42:SKU-00042-1',
      markup_percent: '0',
      markup_fixed: '2.80',
      rounding: null,
      updated_at: '2026-11-20T08:00:00.000Z',
    },
  ],
  version: 7,
};
export const PUT_RULES_ANSWER_EXAMPLE = {
  ...RULES_EXAMPLE,
  rules: RULES_EXAMPLE.rules.map((r) => ({ ...r, updated_at: '2026-11-22T10:30:00.000Z' })),
  version: 8,
  repriced: 412,
};

export const PUT_RULES_ERRORS = [
  apiError(
    400,
    'bad_request',
    'invalid request: rules.0.markup_percent',
    {
      fields: { 'rules.0.markup_percent': ['markup_percent must be a decimal such as 12.5'] },
    },
    'an invalid member; nothing changed',
    'invalid_member',
  ),
  apiError(
    400,
    'bad_request',
    'invalid request: rules.1, rules.2.rounding',
    {
      fields: { 'rules.1': ['a second rule for category 1'], 'rules.2.rounding': ['rules.2.rounding must be greater than 0'] },
    },
    'two rules for one category or SKU, a rounding step of 0, a percent below -100; nothing changed',
    'invalid_rules',
  ),
  SKU_AMBIGUOUS,
];
