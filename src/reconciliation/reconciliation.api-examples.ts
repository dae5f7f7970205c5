/**
 * OpenAPI schemas and examples of the reconciliation's internal API (CONTRACT §5), exactly as
 * `reconciliation.responses.ts` and the controller answer. test/ops-docs-examples.e2e-spec.ts checks
 * them against the documented schemas.
 */
import type { SchemaObject } from '@nestjs/swagger';
import { apiError, dateTimeSchema, listExample, objectSchema } from '../ops/api-docs.js';
import { RECONCILED_FIELDS } from './reconcile-plan.js';

const count = (description?: string): SchemaObject => ({ type: 'integer', minimum: 0, ...(description ? { description } : {}) });
const nullableString = (description?: string): SchemaObject => ({
  type: 'string',
  nullable: true,
  ...(description ? { description } : {}),
});

export const RECONCILIATION_RUN_SCHEMA: SchemaObject = objectSchema(
  {
    run_id: { type: 'string', description: 'opaque' },
    status: { type: 'string', enum: ['running', 'succeeded', 'failed'] },
    from: dateTimeSchema('the earliest `created_at` of the orders read'),
    to: dateTimeSchema('the latest `created_at` of the orders read (included)'),
    started_at: dateTimeSchema(),
    finished_at: dateTimeSchema(undefined, true),
    orders_total: count(
      'orders created in the range in a finished upstream state (delivered, completed, partially delivered, canceled, ' +
        'refunded, partially refunded) when the run started',
    ),
    orders_done: count('orders handled so far'),
    orders_failed: count('orders of those whose upstream read failed (or that a cancel in progress held): not reconciled by this run'),
    differences: count('differences found so far (items with this run_id)'),
    error: nullableString('why the run failed'),
    heartbeat_at: dateTimeSchema("the running process's last sign of life"),
  },
  [],
  'a reconciliation run (CONTRACT §5)',
);

export const RECONCILIATION_ITEM_SCHEMA: SchemaObject = objectSchema(
  {
    id: { type: 'string' },
    shop_order_no: { type: 'string' },
    field: { type: 'string', enum: [...RECONCILED_FIELDS], description: 'the order field in which the upstream differed' },
    local: nullableString('its value here before the read (money: a decimal string)'),
    upstream: nullableString("the upstream's value"),
    applied: {
      type: 'boolean',
      description:
        "the order now carries the upstream's value (the rules of a poll took it; a report that would move the order back is not applied)",
    },
    run_id: nullableString('the on-demand run that found it; null: the schedule (RECONCILE_AFTER)'),
    detected_at: dateTimeSchema(),
  },
  [],
  'a difference found by reconciliation',
);

export const RECONCILIATION_RUN_EXAMPLE = {
  run_id: 'rec_20261122101500_7506e4e6',
  status: 'succeeded',
  from: '2026-11-20T00:00:00.000Z',
  to: '2026-11-22T00:00:00.000Z',
  started_at: '2026-11-22T10:15:00.112Z',
  finished_at: '2026-11-22T10:16:41.873Z',
  orders_total: 96,
  orders_done: 96,
  orders_failed: 0,
  differences: 2,
  error: null,
  heartbeat_at: '2026-11-22T10:16:41.870Z',
};
export const RUNNING_RECONCILIATION_RUN_EXAMPLE = {
  ...RECONCILIATION_RUN_EXAMPLE,
  run_id: 'rec_20261122113000_0c41aa9e',
  status: 'running',
  started_at: '2026-11-22T11:30:00.020Z',
  finished_at: null,
  orders_done: 41,
  differences: 0,
  heartbeat_at: '2026-11-22T11:30:44.310Z',
};
export const RECONCILIATION_RUN_LIST_EXAMPLE = listExample([RUNNING_RECONCILIATION_RUN_EXAMPLE, RECONCILIATION_RUN_EXAMPLE], 2);

export const RECONCILIATION_ITEM_LIST_EXAMPLE = listExample([
  {
    id: '18',
    shop_order_no: 'SO-1001',
    field: 'refunded_amount',
    local: null,
    upstream: '25.90',
    applied: true,
    run_id: null,
    detected_at: '2026-11-22T11:02:00.410Z',
  },
  {
    id: '17',
    shop_order_no: 'SO-1001',
    field: 'status',
    local: 'completed',
    upstream: 'refunded',
    applied: true,
    run_id: null,
    detected_at: '2026-11-22T11:02:00.410Z',
  },
]);

export const START_RECONCILIATION_EXAMPLES = {
  range: { summary: 'the orders created in two days', value: { from: '2026-11-20T00:00:00Z', to: '2026-11-22T00:00:00Z' } },
};

export const START_RECONCILIATION_ERRORS = [
  apiError(
    400,
    'bad_request',
    'invalid request: to',
    { fields: { to: ['to must be an RFC 3339 date-time not before from, e.g. 2026-11-22T00:00:00Z'] } },
    'a missing or malformed `from`/`to`, or `to` before `from`',
  ),
  apiError(
    409,
    'reconciliation_in_progress',
    'a reconciliation run is already running: rec_20261122113000_0c41aa9e',
    { run_id: 'rec_20261122113000_0c41aa9e' },
    'a run is running on some replica: `run_id` names it',
  ),
];
export const RECONCILIATION_RUN_NOT_FOUND = apiError(
  404,
  'reconciliation_run_not_found',
  'no reconciliation run rec_20261122000000_00000000',
);
export const RECONCILIATION_PAGE_ERRORS = [
  apiError(400, 'bad_request', 'invalid request: page_size', { fields: { page_size: ['page_size must not be greater than 500'] } }),
];
