import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConnectionGuard } from './connection-guard.js';
import { DatabaseEndpoint } from './database-endpoint.js';

/** Connections per process. The embedded server accepts far more (see EmbeddedPostgres). */
export const POOL_SIZE = 10;

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [DatabaseEndpoint],
      useFactory: (endpoint: DatabaseEndpoint) => ({
        type: 'postgres' as const,
        url: endpoint.url,
        applicationName: 'upstream-relay',
        autoLoadEntities: true,
        synchronize: false,
        migrationsRun: false,
        logging: false,
        poolSize: POOL_SIZE,
        extra: { connectionTimeoutMillis: 5000, idleTimeoutMillis: 30000, keepAlive: true },
      }),
    }),
  ],
  providers: [ConnectionGuard],
})
export class DatabaseModule {}

/** The endpoint is opened before Nest starts (migrations included) and handed in as a value. */
@Global()
@Module({})
export class DatabaseEndpointModule {
  static forValue(endpoint: DatabaseEndpoint) {
    return {
      module: DatabaseEndpointModule,
      providers: [{ provide: DatabaseEndpoint, useValue: endpoint }],
      exports: [DatabaseEndpoint],
    };
  }
}
