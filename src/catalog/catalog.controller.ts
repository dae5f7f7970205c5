/** The catalog calls of the internal API (CONTRACT §5). Every `/internal/*` call needs the bearer token. */
import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiExtraModels, ApiOperation, ApiParam, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { AppError } from '../common/app-error.js';
import { listResponse, pageRequest } from '../common/pagination.js';
import { pathKey, storableText } from '../common/validation.js';
import { ApiErrors, ApiPageQuery, listSchema, okSchema } from '../ops/api-docs.js';
import {
  CATEGORIES_EXAMPLE,
  CATEGORY_SCHEMA,
  CHANGE_LIST_EXAMPLE,
  CHANGE_SCHEMA,
  CONFLICT_LIST_EXAMPLE,
  CONFLICT_SCHEMA,
  PAGE_ERRORS,
  RUN_EXAMPLE,
  RUN_LIST_EXAMPLE,
  RUN_SCHEMA,
  SKU_AMBIGUOUS,
  SKU_DETAIL_EXAMPLE,
  SKU_DETAIL_SCHEMA,
  SKU_LIST_ERRORS,
  SKU_LIST_EXAMPLE,
  SKU_NOT_FOUND,
  SKU_SCHEMA,
  START_SYNC_ERRORS,
  START_SYNC_EXAMPLES,
  SYNC_RUN_NOT_FOUND,
} from './catalog.api-examples.js';
import { CatalogService } from './catalog.service.js';
import { CatalogSyncService } from './catalog-sync.service.js';
import { ListQuery, parseRfc3339, SkuListQuery, StartSyncBody, SupplierPageQuery, SupplierQuery } from './catalog.dto.js';
import {
  toCategoryTreeResponse,
  toConflictResponse,
  toSkuChangeResponse,
  toSkuDetailResponse,
  toSkuResponse,
  toSyncRunResponse,
} from './catalog.responses.js';

/** A path SKU reference no SKU can have is 404 `sku_not_found` at once (see pathKey). */
const SkuCode = pathKey(storableText, (skuCode) => new AppError('sku_not_found', `no SKU ${skuCode}`));

const SkuCodeParam = () =>
  ApiParam({
    name: 'sku_code',
    description:
      "the SKU's `sku_key` (`<product id>:<sku_code>`, URL-encoded or not), or a plain `sku_code`: the one listed SKU " +
      'carrying it (or the one SKU, listed or not); 409 `sku_ambiguous` when several listed SKUs carry it (or only ' +
      "several unlisted ones); `?supplier=` looks at that supplier's SKUs only (a key or code several suppliers carry is " +
      'ambiguous without it, the candidates named `{supplier, sku_key}`)',
    example: '42:SKU-00042-1',
  });

@ApiTags('catalog')
@ApiBearerAuth()
@ApiExtraModels(StartSyncBody)
@Controller('internal/catalog')
export class CatalogController {
  constructor(
    private readonly catalog: CatalogService,
    private readonly sync: CatalogSyncService,
  ) {}

  @Get('categories')
  @ApiOperation({
    summary: 'The category tree',
    description:
      'Every category the suppliers list, as a tree per supplier (upstream ids, each category naming its `supplier`), ' +
      "each level ordered by `sort_order` descending; `?supplier=` for one supplier's.",
  })
  @ApiResponse({
    status: 200,
    description: 'the tree',
    schema: okSchema({ categories: { type: 'array', items: CATEGORY_SCHEMA } }),
    example: CATEGORIES_EXAMPLE,
  })
  async categories(@Query() q: SupplierQuery) {
    return { ok: true, categories: toCategoryTreeResponse(await this.catalog.categoryTree(q.supplier)) };
  }

  @Get('skus')
  @ApiOperation({
    summary: 'List SKUs',
    description:
      'A page of the local catalog, by `sku_code`, then `product_id` (by `updated_at`, then `sku_code`, then ' +
      '`product_id`, with `changed_since`); unlisted SKUs are included unless `listed=true`. ' +
      '`changed_since` returns the SKUs changed after it, delisted ones included. ' +
      "To follow the catalog: ask with `changed_since=C&after_sku_key=K&page_size=500` (page 1), take the last item's `updated_at` and " +
      '`sku_key` as the next C and K, and stop when a page comes back shorter than `page_size`; start with the time you last synced ' +
      '(or any past time) and no `after_sku_key`. Where no two products carry one code, ' +
      "`changed_since=C&after_sku_code=K&page_size=500` with the last item's `sku_code` as K works the same. No change " +
      'is missed and none is listed twice (a SKU that changes again is listed again, with its new `updated_at`). Paging ' +
      'the same `changed_since` with ' +
      '`page` instead can miss rows while the catalog changes (a SKU that changes again moves to the end of the list).',
  })
  @ApiPageQuery()
  @ApiResponse({ status: 200, description: 'a page of SKUs', schema: listSchema(SKU_SCHEMA), example: SKU_LIST_EXAMPLE })
  @ApiErrors(...SKU_LIST_ERRORS)
  async skus(@Query() q: SkuListQuery) {
    const page = pageRequest(q);
    const since = q.changed_since === undefined ? null : parseRfc3339(q.changed_since);
    const { items, total, currencies } = await this.catalog.listSkus({
      supplier: q.supplier,
      categoryId: q.category_id,
      listed: q.listed,
      available: q.available,
      changedSince: since?.date,
      // A changed_since with a digit beyond the millisecond equals no stored updated_at (stored to the
      // millisecond): the rows after (it, any code) are those after its millisecond, which
      // `updated_at > date` (the millisecond) already says.
      afterSkuCode: since && !since.subMillisecond ? q.after_sku_code : undefined,
      afterSkuKey: since && !since.subMillisecond ? q.after_sku_key : undefined,
      afterSupplier: since && !since.subMillisecond ? q.after_supplier : undefined,
      offset: page.offset,
      limit: page.pageSize,
    });
    return listResponse(
      items.map((s) => toSkuResponse(s, currencies.get(s.supplier) ?? null)),
      total,
      page,
    );
  }

  @Get('skus/:sku_code')
  @ApiOperation({ summary: 'Get a SKU', description: "One SKU (by `sku_key` or `sku_code`), with its product's slug and description." })
  @SkuCodeParam()
  @ApiResponse({
    status: 200,
    description: 'the SKU',
    schema: okSchema({ sku: SKU_DETAIL_SCHEMA }),
    example: { ok: true, sku: SKU_DETAIL_EXAMPLE },
  })
  @ApiErrors(SKU_NOT_FOUND, SKU_AMBIGUOUS)
  async sku(@Param('sku_code', SkuCode) skuCode: string, @Query() q: SupplierQuery) {
    const { sku, currency } = await this.catalog.findSku(skuCode, q.supplier);
    return { ok: true, sku: toSkuDetailResponse(sku, currency) };
  }

  /** The change history of one SKU, newest first. */
  @Get('skus/:sku_code/changes')
  @ApiOperation({
    summary: 'The change history of a SKU',
    description: 'Every change of a field of the SKU (price, stock, listing…), newest first.',
  })
  @SkuCodeParam()
  @ApiPageQuery()
  @ApiResponse({ status: 200, description: 'a page of changes', schema: listSchema(CHANGE_SCHEMA), example: CHANGE_LIST_EXAMPLE })
  @ApiErrors(SKU_NOT_FOUND, SKU_AMBIGUOUS, ...PAGE_ERRORS)
  async skuChanges(@Param('sku_code', SkuCode) skuCode: string, @Query() q: SupplierPageQuery) {
    const page = pageRequest(q);
    const { items, total } = await this.catalog.skuChanges(skuCode, page.offset, page.pageSize, q.supplier);
    return listResponse(items.map(toSkuChangeResponse), total, page);
  }

  /** The sku_code conflicts recorded before SKUs were keyed by product, most recent first (none are recorded now). */
  @Get('conflicts')
  @ApiOperation({
    summary: 'sku_code conflicts (historical)',
    description:
      'sku_codes that a second product claimed during a sync while a SKU was keyed by its code alone, most recent first. ' +
      'None are recorded any more: two products carrying one `sku_code` are two SKUs, each with its own `sku_key`.',
  })
  @ApiPageQuery()
  @ApiResponse({ status: 200, description: 'a page of conflicts', schema: listSchema(CONFLICT_SCHEMA), example: CONFLICT_LIST_EXAMPLE })
  @ApiErrors(...PAGE_ERRORS)
  async conflicts(@Query() q: ListQuery) {
    const page = pageRequest(q);
    const { items, total } = await this.catalog.conflicts(page.offset, page.pageSize);
    return listResponse(items.map(toConflictResponse), total, page);
  }

  @Post('sync')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Start a catalog sync',
    description:
      "Starts a run of a supplier's catalog (`supplier`, default the `UPSTREAM_*` supplier) in the background and " +
      'answers at once with its `run_id` (follow it with `GET /internal/catalog/sync-runs/{run_id}`). One run at a time ' +
      "per supplier across replicas; several suppliers' runs go on at once.",
  })
  @ApiBody({ schema: { $ref: getSchemaPath(StartSyncBody) }, required: false, examples: START_SYNC_EXAMPLES })
  @ApiResponse({
    status: 202,
    description: 'started',
    schema: okSchema({
      run_id: { type: 'string' },
      mode: { type: 'string', enum: ['full', 'incremental'], description: 'the mode the run starts in' },
    }),
    example: { ok: true, run_id: 'run_20261122101500_7506e4e6', mode: 'incremental' },
  })
  @ApiErrors(...START_SYNC_ERRORS)
  async startSync(@Body() body: StartSyncBody) {
    const started = await this.sync.start({ mode: body?.mode, supplier: body?.supplier, trigger: 'api' });
    return { ok: true, run_id: started.runId, mode: started.mode };
  }

  @Get('sync-runs')
  @ApiOperation({ summary: 'List sync runs', description: "Catalog sync runs, newest first (`?supplier=`: one supplier's)." })
  @ApiPageQuery()
  @ApiResponse({ status: 200, description: 'a page of runs', schema: listSchema(RUN_SCHEMA), example: RUN_LIST_EXAMPLE })
  @ApiErrors(...PAGE_ERRORS)
  async runs(@Query() q: SupplierPageQuery) {
    const page = pageRequest(q);
    const { items, total } = await this.sync.listRuns(page.offset, page.pageSize, q.supplier);
    return listResponse(items.map(toSyncRunResponse), total, page);
  }

  @Get('sync-runs/:run_id')
  @ApiOperation({
    summary: 'Get a sync run',
    description: 'One run with its progress (pages, products, SKUs created, changed, delisted, relisted) and its error.',
  })
  @ApiParam({ name: 'run_id', description: 'as `POST /internal/catalog/sync` answered it', example: 'run_20261122094500_1d51e096' })
  @ApiResponse({ status: 200, description: 'the run', schema: okSchema({ run: RUN_SCHEMA }), example: { ok: true, run: RUN_EXAMPLE } })
  @ApiErrors(SYNC_RUN_NOT_FOUND)
  async run(@Param('run_id', pathKey(storableText, (id) => new AppError('sync_run_not_found', `no sync run ${id}`))) runId: string) {
    return { ok: true, run: toSyncRunResponse(await this.sync.getRun(runId)) };
  }
}
