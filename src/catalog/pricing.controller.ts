/** `GET/PUT /internal/pricing/rules`: markup rules by supplier, by category and by SKU (sku_key or sku_code) over the defaults of §3. */
import { Body, Controller, Get, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiExtraModels, ApiOperation, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { ApiErrors } from '../ops/api-docs.js';
import {
  PRICING_RULES_SCHEMA,
  PUT_RULES_ANSWER_EXAMPLE,
  PUT_RULES_ERRORS,
  PUT_RULES_EXAMPLE,
  RULES_EXAMPLE,
} from './pricing.api-examples.js';
import { PutPricingRulesBody } from './catalog.dto.js';
import { toPricingRulesResponse } from './catalog.responses.js';
import { PricingService } from './pricing.service.js';

@ApiTags('pricing')
@ApiBearerAuth()
@ApiExtraModels(PutPricingRulesBody)
@Controller('internal/pricing')
export class PricingController {
  constructor(private readonly pricing: PricingService) {}

  @Get('rules')
  @ApiOperation({
    summary: 'The pricing rules',
    description:
      "The markup rules by supplier, by category (of a supplier) and by SKU (`sku_key`, with the SKU's `sku_code`; a " +
      'rule set by a code no SKU carried then has `sku_key` null and applies to the SKUs carrying that code), ' +
      'over the defaults (PRICE_MARKUP_PERCENT, PRICE_MARKUP_FIXED, PRICE_ROUNDING).',
  })
  @ApiResponse({ status: 200, description: 'the rules', schema: PRICING_RULES_SCHEMA, example: RULES_EXAMPLE })
  async rules() {
    return toPricingRulesResponse(await this.pricing.getRules());
  }

  /** Replaces every rule; the local catalog is repriced before the answer. */
  @Put('rules')
  @ApiOperation({
    summary: 'Replace the pricing rules',
    description:
      'Replaces every rule (an empty list removes them all); every `sale_price` is recomputed before the answer; ' +
      '`repriced` counts the SKUs whose sale price changed. ' +
      "A SKU rule's `sku_code` takes the SKU's `sku_key` or a plain `sku_code`; a code several listed SKUs carry is 409 " +
      '`sku_ambiguous` (nothing changed).',
  })
  @ApiBody({
    schema: { $ref: getSchemaPath(PutPricingRulesBody) },
    examples: { rules: { summary: 'a category rule and a SKU rule', value: PUT_RULES_EXAMPLE } },
  })
  @ApiResponse({ status: 200, description: 'the rules now', schema: PRICING_RULES_SCHEMA, example: PUT_RULES_ANSWER_EXAMPLE })
  @ApiErrors(...PUT_RULES_ERRORS)
  async replace(@Body() body: PutPricingRulesBody) {
    const change = await this.pricing.replaceRules(
      body.rules.map((r) => {
        const markup = {
          supplier: r.supplier ?? null,
          markupPercent: r.markup_percent,
          markupFixed: r.markup_fixed,
          rounding: r.rounding ?? null,
        };
        if (r.scope === 'supplier') return { scope: 'supplier' as const, ...markup };
        if (r.scope === 'category') return { scope: 'category' as const, categoryId: r.category_id!, ...markup };
        return { scope: 'sku' as const, skuCode: r.sku_code!, ...markup };
      }),
    );
    return toPricingRulesResponse(change);
  }
}
