/**
 * The local catalog: sync (scheduled, on start, on request), pricing rules, internal API.
 * Exports for other modules: CatalogService (`getSku`, `refreshProduct`), CatalogSyncService
 * (runs with progress, for the CLI) and SyncRunRepository (the last run, for /health).
 */
import { Module } from '@nestjs/common';
import { MediaModule } from '../media/media.module.js';
import { OffersModule } from '../offers/offers.module.js';
import { CatalogController } from './catalog.controller.js';
import { CatalogReadRepository } from './catalog-read.repository.js';
import { CatalogRepository } from './catalog.repository.js';
import { CatalogScheduler } from './catalog.scheduler.js';
import { CatalogService } from './catalog.service.js';
import { CatalogSyncService } from './catalog-sync.service.js';
import { CatalogWriter } from './catalog-writer.service.js';
import { CategoryRepository } from './category.repository.js';
import { CommitModeRepository } from './commit-mode.repository.js';
import { DelistingChecks } from './delisting-checks.service.js';
import { OrderedRereads } from './ordered-rereads.service.js';
import { PricingContextService } from './pricing-context.service.js';
import { PricingController } from './pricing.controller.js';
import { PricingRepository } from './pricing.repository.js';
import { PricingService } from './pricing.service.js';
import { ProductMediaService } from './product-media.service.js';
import { ProductRepository } from './product.repository.js';
import { ProductsController } from './products.controller.js';
import { ProductsPass } from './products-pass.service.js';
import { SkuWriteRepository } from './sku-write.repository.js';
import { SyncRunLease } from './sync-run-lease.service.js';
import { SyncRunRepository } from './sync-run.repository.js';

@Module({
  imports: [MediaModule, OffersModule],
  controllers: [CatalogController, PricingController, ProductsController],
  providers: [
    ProductRepository,
    ProductMediaService,
    CatalogRepository,
    SkuWriteRepository,
    CatalogReadRepository,
    CategoryRepository,
    SyncRunRepository,
    CommitModeRepository,
    PricingRepository,
    PricingContextService,
    CatalogWriter,
    PricingService,
    CatalogService,
    SyncRunLease,
    ProductsPass,
    DelistingChecks,
    OrderedRereads,
    CatalogSyncService,
    CatalogScheduler,
  ],
  exports: [CatalogService, CatalogSyncService, SyncRunRepository],
})
export class CatalogModule {}
