/** OpenAPI schemas and examples of the products calls (CONTRACT §5, "A product"). */
import type { SchemaObject } from '@nestjs/swagger';
import { apiError, dateTimeSchema, listExample, objectSchema } from '../ops/api-docs.js';

const text = (description: string): SchemaObject => ({ type: 'object', additionalProperties: { type: 'string' }, description });

export const PRODUCT_SCHEMA: SchemaObject = objectSchema(
  {
    supplier: { type: 'string', description: "the supplier's name (CONTRACT §10; the `UPSTREAM_*` supplier's is UPSTREAM_NAME)" },
    product_id: { type: 'integer', description: 'upstream product id' },
    slug: { type: 'string' },
    title: text('by language'),
    description: text('by language'),
    content: {
      ...text(
        "the detail page, HTML by language; every `<img src>` names the relay's mirrored image (an image refused or not " +
          'fetched yet is left out)',
      ),
      nullable: true,
    },
    images: {
      type: 'array',
      items: { type: 'string' },
      description:
        "the relay's URLs of the mirrored images (MEDIA_PUBLIC_URL + `/<sha256>.<ext>`, default relative " +
        "`/media/<sha256>.<ext>`); the upstream's URLs with MEDIA_MIRROR=false",
    },
    tags: { type: 'array', items: { type: 'string' } },
    seo_meta: { type: 'object', additionalProperties: true, nullable: true },
    category_id: { type: 'integer', description: 'upstream category id' },
    listed: { type: 'boolean', description: 'at least one of its SKUs is listed' },
    sku_keys: { type: 'array', items: { type: 'string' }, description: 'its SKUs (`GET /internal/catalog/skus/{sku_key}`)' },
    updated_at: dateTimeSchema('moves when anything the shop is shown of the product changes (images and content included)'),
  },
  [],
  'a product with everything a storefront shows (CONTRACT §5)',
);

export const PRODUCT_EXAMPLE = {
  supplier: 'main',
  product_id: 42,
  slug: 'product-42',
  title: { 'zh-CN': 'Steam 激活码 商品 42', en: 'Steam keys product 42' },
  description: { 'zh-CN': 'Steam 激活码：示例商品 42', en: 'Steam keys: sample product 42' },
  content: {
    en:
      '<p>Details of product 42</p><img ' +
      'src="/media/5d41402abc4b2a76b9719d911017c592aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.png" alt="product 42">',
  },
  images: ['/media/5d41402abc4b2a76b9719d911017c592aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.png'],
  tags: ['steam-keys'],
  seo_meta: { title: 'Product 42', keywords: ['steam-keys'] },
  category_id: 11,
  listed: true,
  sku_keys: ['42:SKU-00042-1', '42:SKU-00042-2'],
  updated_at: '2026-11-22T10:00:00.000Z',
};

export const PRODUCT_LIST_EXAMPLE = listExample([PRODUCT_EXAMPLE]);
export const PRODUCT_NOT_FOUND = apiError(404, 'product_not_found', 'no product 99999 of supplier main');
