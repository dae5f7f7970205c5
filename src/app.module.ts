import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { CallbacksModule } from './callbacks/callbacks.module.js';
import { CatalogModule } from './catalog/catalog.module.js';
import { Clock, SystemClock } from './common/clock.js';
import { ConsoleModule } from './console/console.module.js';
import { AppExceptionFilter } from './common/exception.filter.js';
import { InternalAuthGuard } from './common/internal-auth.guard.js';
import { AppConfig } from './config/app-config.js';
import type { DatabaseEndpoint } from './database/database-endpoint.js';
import { DatabaseEndpointModule, DatabaseModule } from './database/database.module.js';
import { OutboxWriter } from './notifications/outbox.writer.js';
import { NotificationsModule } from './notifications/notifications.module.js';
import { Metrics } from './ops/metrics.service.js';
import { OffersModule } from './offers/offers.module.js';
import { OpsModule } from './ops/ops.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { ReconciliationModule } from './reconciliation/reconciliation.module.js';
import { RetentionModule } from './retention/retention.module.js';
import { UpstreamModule } from './upstream/upstream.module.js';

@Global()
@Module({})
class CoreModule {
  static register(config: AppConfig, clock: Clock): DynamicModule {
    return {
      module: CoreModule,
      providers: [{ provide: AppConfig, useValue: config }, { provide: Clock, useValue: clock }, Metrics, OutboxWriter],
      exports: [AppConfig, Clock, Metrics, OutboxWriter],
    };
  }
}

export interface AppModuleOptions {
  config: AppConfig;
  endpoint: DatabaseEndpoint;
  clock?: Clock;
}

@Module({})
export class AppModule {
  static register(options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.register(options.config, options.clock ?? new SystemClock()),
        DatabaseEndpointModule.forValue(options.endpoint),
        DatabaseModule,
        ScheduleModule.forRoot(),
        UpstreamModule,
        CatalogModule,
        OffersModule,
        OrdersModule,
        CallbacksModule,
        NotificationsModule,
        OpsModule,
        ReconciliationModule,
        RetentionModule,
        ConsoleModule,
      ],
      providers: [
        { provide: APP_GUARD, useClass: InternalAuthGuard },
        { provide: APP_FILTER, useClass: AppExceptionFilter },
      ],
    };
  }
}
