/** The offers of the internal API (CONTRACT §11). Every `/internal/*` call needs the bearer token. */
import { Body, Controller, Delete, Get, Param, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiExtraModels, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { badRequest } from '../common/app-error.js';
import { listResponse, pageRequest } from '../common/pagination.js';
import { pathKey } from '../common/validation.js';
import { parseRfc3339 } from '../catalog/catalog.dto.js';
import { ApiErrors, ApiPageQuery, listSchema, okSchema } from '../ops/api-docs.js';
import { OFFER_CODE_RE } from './offer-input.js';
import {
  OFFER_EXAMPLE,
  OFFER_LIST_ERRORS,
  OFFER_LIST_EXAMPLE,
  OFFER_NOT_FOUND,
  OFFER_SCHEMA,
  PUT_OFFER_ERRORS,
  PUT_OFFER_EXAMPLES,
} from './offers.api-examples.js';
import { OfferListQuery, PutOfferBody } from './offers.dto.js';
import { toOfferResponse } from './offers.responses.js';
import { offerNotFound, OffersService } from './offers.service.js';

/** A path code no offer can have is 404 `offer_not_found` at once. */
const OfferCode = pathKey((code) => OFFER_CODE_RE.test(code), offerNotFound);
const CodeParam = () => ApiParam({ name: 'code', description: "the offer's code (`[A-Za-z0-9._:-]{1,64}`)", example: 'steam-wallet-50' });

@ApiTags('offers')
@ApiBearerAuth()
@ApiExtraModels(PutOfferBody)
@Controller('internal/offers')
export class OffersController {
  constructor(private readonly offers: OffersService) {}

  @Get()
  @ApiOperation({
    summary: 'List offers',
    description:
      'A page of offers by `code`; with `changed_since`, those whose sale price or availability changed later, by ' +
      '`updated_at`, then `code`.',
  })
  @ApiPageQuery()
  @ApiResponse({ status: 200, description: 'a page of offers', schema: listSchema(OFFER_SCHEMA), example: OFFER_LIST_EXAMPLE })
  @ApiErrors(...OFFER_LIST_ERRORS)
  async list(@Query() q: OfferListQuery) {
    const page = pageRequest(q);
    let changedSince: Date | undefined;
    if (q.changed_since !== undefined) {
      const since = parseRfc3339(q.changed_since);
      if (since === null) throw badRequest('invalid request: changed_since', { changed_since: ['changed_since names no instant'] });
      changedSince = since.date;
    }
    const { items, total } = await this.offers.list({ available: q.available, changedSince, offset: page.offset, limit: page.pageSize });
    return listResponse(items.map(toOfferResponse), total, page);
  }

  @Get(':code')
  @ApiOperation({ summary: 'Get an offer', description: 'One offer, with its sources\u2019 live cost and stock.' })
  @CodeParam()
  @ApiResponse({
    status: 200,
    description: 'the offer',
    schema: okSchema({ offer: OFFER_SCHEMA }),
    example: { ok: true, offer: OFFER_EXAMPLE },
  })
  @ApiErrors(OFFER_NOT_FOUND)
  async get(@Param('code', OfferCode) code: string) {
    return { ok: true, offer: toOfferResponse(await this.offers.get(code)) };
  }

  @Put(':code')
  @ApiOperation({
    summary: 'Create or replace an offer',
    description:
      'One shop product bought from 1–10 sources (`{supplier, sku_key}`, no SKU twice, one currency), routed by ' +
      '`priority` or `cheapest`. ' +
      "Without `sale_price`, the offer's is the pricing rules applied to the highest cost among its available sources. " +
      'Answers 201 when it is created, 200 when it replaced one; nothing is stored when a check fails.',
  })
  @CodeParam()
  @ApiBody({ type: PutOfferBody, examples: PUT_OFFER_EXAMPLES })
  @ApiResponse({
    status: 200,
    description: 'replaced',
    schema: okSchema({ offer: OFFER_SCHEMA }),
    example: { ok: true, offer: OFFER_EXAMPLE },
  })
  @ApiResponse({
    status: 201,
    description: 'created',
    schema: okSchema({ offer: OFFER_SCHEMA }),
    example: { ok: true, offer: OFFER_EXAMPLE },
  })
  @ApiErrors(...PUT_OFFER_ERRORS)
  async put(@Param('code') code: string, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const { created, ...offer } = await this.offers.put(code, body);
    void reply.status(created ? 201 : 200);
    return { ok: true, offer: toOfferResponse(offer) };
  }

  @Delete(':code')
  @ApiOperation({ summary: 'Delete an offer', description: 'Removes the offer; orders placed through it keep their history.' })
  @CodeParam()
  @ApiResponse({ status: 200, description: 'deleted', schema: okSchema({}), example: { ok: true } })
  @ApiErrors(OFFER_NOT_FOUND)
  async delete(@Param('code', OfferCode) code: string) {
    await this.offers.delete(code);
    return { ok: true };
  }
}
