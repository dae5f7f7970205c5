/**
 * The products of the internal API (CONTRACT §5, "A product"): every field of the upstream product,
 * its images named by the relay's own URLs (src/media/), its SKUs' keys, `listed` and `updated_at`.
 * A product is a supplier's (two suppliers may both have product 1): `?supplier=` lists or looks up
 * that supplier's only; without it, every supplier's are listed, and a look-up of an id several
 * suppliers have is 409 `sku_ambiguous` naming them (`{supplier, product_id}`).
 */
import { Controller, Get, Param, ParseIntPipe, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AppError } from '../common/app-error.js';
import { listResponse, pageRequest } from '../common/pagination.js';
import { ApiErrors, ApiPageQuery, listSchema, okSchema } from '../ops/api-docs.js';
import { parseRfc3339, ProductListQuery, ProductQuery } from './catalog.dto.js';
import { ProductRepository, type StoredProduct } from './product.repository.js';
import { PRODUCT_EXAMPLE, PRODUCT_LIST_EXAMPLE, PRODUCT_NOT_FOUND, PRODUCT_SCHEMA } from './products.api-examples.js';

export function toProductResponse(p: StoredProduct) {
  return {
    supplier: p.supplier,
    product_id: p.product_id,
    slug: p.slug,
    title: p.title,
    description: p.description,
    content: p.shown.content ?? null,
    images: p.shown.images ?? [],
    tags: p.tags ?? [],
    seo_meta: p.seo_meta ?? null,
    category_id: p.category_id,
    listed: p.listed,
    sku_keys: p.sku_keys,
    updated_at: new Date(p.updated_at).toISOString(),
  };
}

@ApiTags('catalog')
@ApiBearerAuth()
@Controller('internal/catalog/products')
export class ProductsController {
  constructor(private readonly products: ProductRepository) {}

  @Get()
  @ApiOperation({
    summary: 'List products',
    description:
      'Products with everything a storefront shows, by `product_id` (by `updated_at`, then `product_id`, with ' +
      '`changed_since`). Images are mirrored: ' +
      "`images` and every `<img src>` of `content` name the relay's `/media` URLs, never the supplier's host.",
  })
  @ApiPageQuery()
  @ApiResponse({ status: 200, description: 'a page of products', schema: listSchema(PRODUCT_SCHEMA), example: PRODUCT_LIST_EXAMPLE })
  async list(@Query() q: ProductListQuery) {
    const page = pageRequest(q);
    const since = q.changed_since === undefined ? undefined : parseRfc3339(q.changed_since)?.date;
    const { items, total } = await this.products.list({
      supplier: q.supplier,
      listed: q.listed,
      changedSince: since,
      offset: page.offset,
      limit: page.pageSize,
    });
    return listResponse(
      items.map((p) => toProductResponse(p)),
      total,
      page,
    );
  }

  @Get(':product_id')
  @ApiOperation({ summary: 'Get a product', description: 'One product by its upstream id.' })
  @ApiParam({ name: 'product_id', description: 'the upstream product id', example: 42 })
  @ApiResponse({
    status: 200,
    description: 'the product',
    schema: okSchema({ product: PRODUCT_SCHEMA }),
    example: { ok: true, product: PRODUCT_EXAMPLE },
  })
  @ApiErrors(PRODUCT_NOT_FOUND)
  async get(
    @Param('product_id', new ParseIntPipe({ exceptionFactory: () => new AppError('product_not_found', 'no such product') }))
    productId: number,
    @Query() q: ProductQuery,
  ) {
    const found = await this.products.get(productId, q.supplier);
    if (found.length === 0) {
      throw new AppError('product_not_found', `no product ${productId}${q.supplier === undefined ? '' : ` of supplier ${q.supplier}`}`);
    }
    if (found.length > 1) {
      throw new AppError('sku_ambiguous', `product ${productId} exists at several suppliers: name one with ?supplier=`, {
        candidates: found.map((p) => ({ supplier: p.supplier, product_id: p.product_id })),
      });
    }
    return { ok: true, product: toProductResponse(found[0]) };
  }
}
