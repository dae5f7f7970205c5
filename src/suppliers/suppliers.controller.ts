/**
 * `/internal/suppliers` (CONTRACT §10). Bearer token checked by the global InternalAuthGuard. The
 * bodies are read by supplier-input.ts (pure), not by the validation pipe: the body parameters are
 * plain objects, so the pipe passes them as they are.
 */
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { listResponse, pageRequest, PageQuery } from '../common/pagination.js';
import { pathKey } from '../common/validation.js';
import { ApiErrors, ApiPageQuery, listSchema, okSchema } from '../ops/api-docs.js';
import { supplierNotFound } from './supplier-registry.service.js';
import { SupplierService } from './supplier.service.js';
import { SUPPLIER_NAME_PATTERN } from './supplier.types.js';
import {
  ADD_SUPPLIER_ERRORS,
  ADD_SUPPLIER_EXAMPLES,
  DELETE_SUPPLIER_ERRORS,
  DELETE_SUPPLIER_EXAMPLE,
  GET_SUPPLIER_ERRORS,
  PATCH_SUPPLIER_ERRORS,
  PATCH_SUPPLIER_EXAMPLES,
  SUPPLIER_BODY_SCHEMA,
  SUPPLIER_EXAMPLE,
  SUPPLIER_LIST_EXAMPLE,
  SUPPLIER_PATCH_SCHEMA,
  SUPPLIER_SCHEMA,
} from './suppliers.api-examples.js';

/** A name no supplier can have is 404 `supplier_not_found` at once (see pathKey). */
const SupplierName = pathKey((name) => SUPPLIER_NAME_PATTERN.test(name), supplierNotFound);
const NameParam = () => ApiParam({ name: 'name', description: "the supplier's name", example: 'acme' });
const ONE_SCHEMA = okSchema({ supplier: SUPPLIER_SCHEMA });

class SupplierListQuery extends PageQuery {}

@ApiTags('suppliers')
@ApiBearerAuth()
@Controller('internal/suppliers')
export class SuppliersController {
  constructor(private readonly suppliers: SupplierService) {}

  @Get()
  @ApiOperation({
    summary: 'List the suppliers',
    description: 'Every supplier: the `UPSTREAM_*` one first, then by name, each with its health, wallet and last sync.',
  })
  @ApiPageQuery()
  @ApiResponse({ status: 200, description: 'the suppliers', schema: listSchema(SUPPLIER_SCHEMA), example: SUPPLIER_LIST_EXAMPLE })
  async list(@Query() q: SupplierListQuery) {
    const page = pageRequest(q);
    const all = await this.suppliers.list();
    return listResponse(all.slice(page.offset, page.offset + page.pageSize), all.length, page);
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Add a supplier',
    description:
      'Its credentials are checked with `POST /ping` first: when the upstream refuses them (502 `upstream_auth_failed`) ' +
      'or cannot be reached (503 `upstream_unavailable`), nothing is saved. The secret is stored encrypted and never ' +
      'answered.',
  })
  @ApiBody({ schema: SUPPLIER_BODY_SCHEMA, examples: ADD_SUPPLIER_EXAMPLES })
  @ApiResponse({
    status: 201,
    description: 'added (health and wallet from its ping)',
    schema: ONE_SCHEMA,
    example: { ok: true, supplier: SUPPLIER_EXAMPLE },
  })
  @ApiErrors(...ADD_SUPPLIER_ERRORS)
  async add(@Body() body: Record<string, unknown>) {
    return { ok: true, supplier: await this.suppliers.add(body) };
  }

  @Get(':name')
  @ApiOperation({ summary: 'Get a supplier', description: 'One supplier with its settings, health, wallet and last sync.' })
  @NameParam()
  @ApiResponse({ status: 200, description: 'the supplier', schema: ONE_SCHEMA, example: { ok: true, supplier: SUPPLIER_EXAMPLE } })
  @ApiErrors(...GET_SUPPLIER_ERRORS)
  async get(@Param('name', SupplierName) name: string) {
    return { ok: true, supplier: await this.suppliers.get(name) };
  }

  @Patch(':name')
  @ApiOperation({
    summary: 'Change a supplier',
    description:
      'Changes the fields given. New credentials (or a new base URL, profile, header prefix or template) are pinged ' +
      'first, as when adding one. `enabled: false` stops its syncs and new orders to it; its unfinished orders are still ' +
      'followed. The `UPSTREAM_*` supplier is changed through the environment only.',
  })
  @NameParam()
  @ApiBody({ schema: SUPPLIER_PATCH_SCHEMA, examples: PATCH_SUPPLIER_EXAMPLES })
  @ApiResponse({
    status: 200,
    description: 'changed',
    schema: ONE_SCHEMA,
    example: { ok: true, supplier: { ...SUPPLIER_EXAMPLE, enabled: false } },
  })
  @ApiErrors(...PATCH_SUPPLIER_ERRORS)
  async change(@Param('name', SupplierName) name: string, @Body() body: Record<string, unknown>) {
    return { ok: true, supplier: await this.suppliers.change(name, body) };
  }

  @Delete(':name')
  @ApiOperation({
    summary: 'Delete a supplier',
    description:
      'Refused (409 `supplier_busy`) while it has unfinished orders. Removes the supplier and unlists its SKUs; its ' +
      'orders keep their history.',
  })
  @NameParam()
  @ApiResponse({
    status: 200,
    description: 'deleted',
    schema: okSchema({ name: { type: 'string' }, skus_unlisted: { type: 'integer', minimum: 0, description: 'its SKUs unlisted now' } }),
    example: DELETE_SUPPLIER_EXAMPLE,
  })
  @ApiErrors(...DELETE_SUPPLIER_ERRORS)
  async remove(@Param('name', SupplierName) name: string) {
    return { ok: true, ...(await this.suppliers.remove(name)) };
  }
}
