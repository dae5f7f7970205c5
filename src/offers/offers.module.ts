import { Module } from '@nestjs/common';
import { OfferRepository } from './offer.repository.js';
import { OfferValuation } from './offer-valuation.service.js';
import { OffersController } from './offers.controller.js';
import { OffersService } from './offers.service.js';

/**
 * Offers (CONTRACT §11): one shop product over several suppliers' SKUs. Exports OfferValuation, which
 * the catalog's write path calls in its transactions, and OfferRepository, for the order path's route.
 * Imports no module of the catalog's (it reads `catalog_skus` through its own repository), so that the
 * catalog can import it.
 */
@Module({
  controllers: [OffersController],
  providers: [OfferRepository, OfferValuation, OffersService],
  exports: [OfferValuation, OfferRepository],
})
export class OffersModule {}
