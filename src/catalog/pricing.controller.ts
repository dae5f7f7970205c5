/** `GET/PUT /internal/pricing/rules`: markup rules by category and by sku_code over the defaults of §3. */
import { Body, Controller, Get, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { PutPricingRulesBody } from './catalog.dto.js';
import { toPricingRulesResponse } from './catalog.responses.js';
import { PricingService } from './pricing.service.js';

@ApiTags('pricing')
@ApiBearerAuth()
@Controller('internal/pricing')
export class PricingController {
  constructor(private readonly pricing: PricingService) {}

  @Get('rules')
  async rules() {
    return toPricingRulesResponse(await this.pricing.getRules());
  }

  /** Replaces every rule; the local catalog is repriced before the answer. */
  @Put('rules')
  async replace(@Body() body: PutPricingRulesBody) {
    const change = await this.pricing.replaceRules(
      body.rules.map((r) =>
        r.scope === 'category'
          ? { scope: 'category' as const, categoryId: r.category_id!, markupPercent: r.markup_percent, markupFixed: r.markup_fixed, rounding: r.rounding ?? null }
          : { scope: 'sku' as const, skuCode: r.sku_code!, markupPercent: r.markup_percent, markupFixed: r.markup_fixed, rounding: r.rounding ?? null },
      ),
    );
    return toPricingRulesResponse(change);
  }
}
