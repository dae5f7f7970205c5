/** The catalog calls of the internal API (CONTRACT §5). Every `/internal/*` call needs the bearer token. */
import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { listResponse, pageRequest } from '../common/pagination.js';
import { CatalogService } from './catalog.service.js';
import { CatalogSyncService } from './catalog-sync.service.js';
import { ListQuery, SkuListQuery, StartSyncBody } from './catalog.dto.js';
import {
  toCategoryTreeResponse,
  toConflictResponse,
  toSkuChangeResponse,
  toSkuDetailResponse,
  toSkuResponse,
  toSyncRunResponse,
} from './catalog.responses.js';

@ApiTags('catalog')
@ApiBearerAuth()
@Controller('internal/catalog')
export class CatalogController {
  constructor(
    private readonly catalog: CatalogService,
    private readonly sync: CatalogSyncService,
  ) {}

  @Get('categories')
  async categories() {
    return { ok: true, categories: toCategoryTreeResponse(await this.catalog.categoryTree()) };
  }

  @Get('skus')
  async skus(@Query() q: SkuListQuery) {
    const page = pageRequest(q);
    const { items, total, currency } = await this.catalog.listSkus({
      categoryId: q.category_id,
      listed: q.listed,
      available: q.available,
      changedSince: q.changed_since === undefined ? undefined : new Date(q.changed_since),
      offset: page.offset,
      limit: page.pageSize,
    });
    return listResponse(
      items.map((s) => toSkuResponse(s, currency)),
      total,
      page,
    );
  }

  @Get('skus/:sku_code')
  async sku(@Param('sku_code') skuCode: string) {
    const { sku, currency } = await this.catalog.findSku(skuCode);
    return { ok: true, sku: toSkuDetailResponse(sku, currency) };
  }

  /** The change history of one SKU, newest first. */
  @Get('skus/:sku_code/changes')
  async skuChanges(@Param('sku_code') skuCode: string, @Query() q: ListQuery) {
    const page = pageRequest(q);
    const { items, total } = await this.catalog.skuChanges(skuCode, page.offset, page.pageSize);
    return listResponse(items.map(toSkuChangeResponse), total, page);
  }

  /** sku_codes claimed by two products (the owner keeps them), most recent first. */
  @Get('conflicts')
  async conflicts(@Query() q: ListQuery) {
    const page = pageRequest(q);
    const { items, total } = await this.catalog.conflicts(page.offset, page.pageSize);
    return listResponse(items.map(toConflictResponse), total, page);
  }

  @Post('sync')
  @HttpCode(202)
  async startSync(@Body() body: StartSyncBody) {
    const started = await this.sync.start({ mode: body?.mode, trigger: 'api' });
    return { ok: true, run_id: started.runId, mode: started.mode };
  }

  @Get('sync-runs')
  async runs(@Query() q: ListQuery) {
    const page = pageRequest(q);
    const { items, total } = await this.sync.listRuns(page.offset, page.pageSize);
    return listResponse(items.map(toSyncRunResponse), total, page);
  }

  @Get('sync-runs/:run_id')
  async run(@Param('run_id') runId: string) {
    return { ok: true, run: toSyncRunResponse(await this.sync.getRun(runId)) };
  }
}
