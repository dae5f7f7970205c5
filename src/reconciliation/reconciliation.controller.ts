/** The reconciliation calls of the internal API (CONTRACT §5). Every `/internal/*` call needs the bearer token. */
import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiExtraModels, ApiOperation, ApiParam, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { AppError, badRequest } from '../common/app-error.js';
import { listResponse, pageRequest } from '../common/pagination.js';
import { pathKey, storableText } from '../common/validation.js';
import { parseRfc3339 } from '../catalog/catalog.dto.js';
import { ApiErrors, ApiPageQuery, listSchema, okSchema } from '../ops/api-docs.js';
import {
  RECONCILIATION_ITEM_LIST_EXAMPLE,
  RECONCILIATION_ITEM_SCHEMA,
  RECONCILIATION_PAGE_ERRORS,
  RECONCILIATION_RUN_EXAMPLE,
  RECONCILIATION_RUN_LIST_EXAMPLE,
  RECONCILIATION_RUN_NOT_FOUND,
  RECONCILIATION_RUN_SCHEMA,
  START_RECONCILIATION_ERRORS,
  START_RECONCILIATION_EXAMPLES,
} from './reconciliation.api-examples.js';
import { ReconciliationItemsQuery, ReconciliationRunsQuery, StartReconciliationBody } from './reconciliation.dto.js';
import { toReconciliationItemResponse, toReconciliationRunResponse } from './reconciliation.responses.js';
import { ReconciliationService } from './reconciliation.service.js';

const RunId = pathKey(storableText, (id) => new AppError('reconciliation_run_not_found', `no reconciliation run ${id}`));

@ApiTags('reconciliation')
@ApiBearerAuth()
@ApiExtraModels(StartReconciliationBody)
@Controller('internal/reconciliation')
export class ReconciliationController {
  constructor(private readonly service: ReconciliationService) {}

  @Post()
  @HttpCode(202)
  @ApiOperation({
    summary: 'Start a reconciliation run',
    description:
      'Reads again from the upstream every order created from `from` to `to` (included) that is in a finished upstream ' +
      'state, in the background, ' +
      'at the lowest priority of the request budget, and answers at once with its `run_id` (follow it with `GET ' +
      '/internal/reconciliation/runs/{run_id}`). ' +
      'Each difference (status, amount, refunded amount) is applied by the rules of a poll, listed in `GET ' +
      '/internal/reconciliation/items` and sent to the shop ' +
      'as an `order.reconciled` webhook. One run at a time across replicas.',
  })
  @ApiBody({ schema: { $ref: getSchemaPath(StartReconciliationBody) }, examples: START_RECONCILIATION_EXAMPLES })
  @ApiResponse({
    status: 202,
    description: 'started',
    schema: okSchema({
      run_id: { type: 'string' },
      orders_total: { type: 'integer', minimum: 0, description: 'the orders the run reads' },
    }),
    example: { ok: true, run_id: 'rec_20261122101500_7506e4e6', orders_total: 96 },
  })
  @ApiErrors(...START_RECONCILIATION_ERRORS)
  async start(@Body() body: StartReconciliationBody) {
    const from = parseRfc3339(body.from);
    const to = parseRfc3339(body.to);
    const fields: Record<string, string[]> = {};
    if (!from) fields.from = ['from must be an RFC 3339 date-time naming an instant, e.g. 2026-11-20T00:00:00Z'];
    if (!to) fields.to = ['to must be an RFC 3339 date-time naming an instant, e.g. 2026-11-22T00:00:00Z'];
    else if (from && to.date < from.date) fields.to = ['to must be an RFC 3339 date-time not before from, e.g. 2026-11-22T00:00:00Z'];
    if (Object.keys(fields).length > 0 || !from || !to) throw badRequest(`invalid request: ${Object.keys(fields).join(', ')}`, fields);
    const started = await this.service.start(from.date, to.date);
    return { ok: true, run_id: started.runId, orders_total: started.ordersTotal };
  }

  @Get('runs')
  @ApiOperation({ summary: 'List reconciliation runs', description: 'On-demand reconciliation runs, newest first.' })
  @ApiPageQuery()
  @ApiResponse({
    status: 200,
    description: 'a page of runs',
    schema: listSchema(RECONCILIATION_RUN_SCHEMA),
    example: RECONCILIATION_RUN_LIST_EXAMPLE,
  })
  @ApiErrors(...RECONCILIATION_PAGE_ERRORS)
  async runs(@Query() q: ReconciliationRunsQuery) {
    const page = pageRequest(q);
    const { items, total } = await this.service.listRuns(page.offset, page.pageSize);
    return listResponse(items.map(toReconciliationRunResponse), total, page);
  }

  @Get('runs/:run_id')
  @ApiOperation({
    summary: 'Get a reconciliation run',
    description: 'One run with its progress (orders read, differences found) and its error.',
  })
  @ApiParam({ name: 'run_id', description: 'as `POST /internal/reconciliation` answered it', example: 'rec_20261122101500_7506e4e6' })
  @ApiResponse({
    status: 200,
    description: 'the run',
    schema: okSchema({ run: RECONCILIATION_RUN_SCHEMA }),
    example: { ok: true, run: RECONCILIATION_RUN_EXAMPLE },
  })
  @ApiErrors(RECONCILIATION_RUN_NOT_FOUND)
  async run(@Param('run_id', RunId) runId: string) {
    return { ok: true, run: toReconciliationRunResponse(await this.service.getRun(runId)) };
  }

  @Get('items')
  @ApiOperation({
    summary: 'Differences found by reconciliation',
    description:
      "Every difference between a finished order and the upstream's read of it, newest first: found by the schedule " +
      '(RECONCILE_AFTER: `run_id` null) ' +
      'or by a run; `shop_order_no` or `run_id` narrows the list.',
  })
  @ApiPageQuery()
  @ApiResponse({
    status: 200,
    description: 'a page of differences',
    schema: listSchema(RECONCILIATION_ITEM_SCHEMA),
    example: RECONCILIATION_ITEM_LIST_EXAMPLE,
  })
  @ApiErrors(...RECONCILIATION_PAGE_ERRORS)
  async items(@Query() q: ReconciliationItemsQuery) {
    const page = pageRequest(q);
    const { items, total } = await this.service.listItems({ shopOrderNo: q.shop_order_no, runId: q.run_id }, page.offset, page.pageSize);
    return listResponse(items.map(toReconciliationItemResponse), total, page);
  }
}
