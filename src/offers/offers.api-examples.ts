/**
 * OpenAPI schemas and examples of the offers' internal API (CONTRACT §11), exactly as
 * `offers.responses.ts` and the controller answer.
 */
import type { SchemaObject } from '@nestjs/swagger';
import { apiError, dateTimeSchema, decimalSchema, listExample, objectSchema } from '../ops/api-docs.js';

const nullableString = (description: string): SchemaObject => ({ type: 'string', nullable: true, description });

export const OFFER_SOURCE_SCHEMA: SchemaObject = objectSchema(
  {
    supplier: { type: 'string', description: 'the supplier' },
    sku_key: { type: 'string', description: "the SKU in that supplier's catalog" },
    cost_price: decimalSchema('its current cost (null: the catalog lacks it)', true),
    currency: nullableString("its supplier's currency"),
    available: { type: 'boolean', description: 'listed, active and not `out_of_stock` in its catalog' },
    stock_status: nullableString('`in_stock`, `low_stock`, `out_of_stock` or `unlimited`'),
  },
  [],
  'a source, with its live cost and stock',
);

export const OFFER_SCHEMA: SchemaObject = objectSchema(
  {
    code: { type: 'string', description: 'the pattern of `shop_order_no`' },
    title: nullableString("the operator's name for it"),
    routing: { type: 'string', enum: ['priority', 'cheapest'] },
    sources: { type: 'array', items: OFFER_SOURCE_SCHEMA },
    sale_price: decimalSchema(
      "the operator's, else the pricing rules applied to the highest cost among the available sources (with none available: among all)",
      true,
    ),
    currency: nullableString("the sources' currency"),
    available: { type: 'boolean', description: 'any source available' },
    updated_at: dateTimeSchema('moves when the sale price or the availability changes'),
  },
  [],
  'an offer (CONTRACT §11)',
);

export const OFFER_EXAMPLE = {
  code: 'steam-wallet-50',
  title: 'Steam wallet 50',
  routing: 'priority',
  sources: [
    { supplier: 'main', sku_key: '42:SKU-00042-1', cost_price: '48.00', currency: 'CNY', available: true, stock_status: 'in_stock' },
    { supplier: 'second', sku_key: '7:STEAM-50', cost_price: '47.20', currency: 'CNY', available: false, stock_status: 'out_of_stock' },
  ],
  sale_price: '52.80',
  currency: 'CNY',
  available: true,
  updated_at: '2026-11-29T10:00:00.000Z',
};

export const PUT_OFFER_EXAMPLES = {
  priority: {
    summary: 'two sources, the first preferred; the sale price from the pricing rules',
    value: {
      title: 'Steam wallet 50',
      routing: 'priority',
      sources: [
        { supplier: 'main', sku_key: '42:SKU-00042-1' },
        { supplier: 'second', sku_key: '7:STEAM-50' },
      ],
    },
  },
  cheapest: {
    summary: "the cheapest source first, at the operator's sale price",
    value: {
      routing: 'cheapest',
      sources: [
        { supplier: 'main', sku_key: '42:SKU-00042-1' },
        { supplier: 'second', sku_key: '7:STEAM-50' },
      ],
      sale_price: '55.00',
    },
  },
};

export const OFFER_LIST_EXAMPLE = listExample([OFFER_EXAMPLE]);

export const OFFER_NOT_FOUND = apiError(404, 'offer_not_found', 'no offer steam-wallet-50');
export const PUT_OFFER_ERRORS = [
  apiError(
    400,
    'bad_request',
    'invalid offer: sources.1.sku_key',
    { fields: { 'sources.1.sku_key': ['the supplier second has no SKU 7:STEAM-50'] } },
    'a bad code or routing, 0 or more than 10 sources, a SKU twice, an unknown supplier or SKU, sources of different ' +
      'currencies: `fields` names each',
  ),
];
export const OFFER_LIST_ERRORS = [
  apiError(400, 'bad_request', 'invalid request: changed_since', {
    fields: { changed_since: ['changed_since must be an RFC 3339 date-time, e.g. 2026-01-01T00:00:00Z'] },
  }),
];
