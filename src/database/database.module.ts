import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConnectionGuard } from './connection-guard.service.js';
import { DatabaseEndpoint } from './database-endpoint.js';
import { SchemaMigrationsRepository } from './schema-migrations.repository.js';

/**
 * Connections per process on the embedded database. It runs one transaction at a time (one backend),
 * so more connections only queue there; it accepts far more (see EmbeddedPostgres).
 */
export const POOL_SIZE = 10;

/** Connections per process on a PostgreSQL server: enough for ~30 concurrent orders without queueing for one. */
export const SERVER_POOL_SIZE = 20;

export function poolSize(kind: DatabaseEndpoint['kind']): number {
  return kind === 'pglite' ? POOL_SIZE : SERVER_POOL_SIZE;
}

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
        poolSize: poolSize(endpoint.kind),
        // The embedded database keeps its connections: they all share its one session, where the
        // named prepared statements of a closed connection would stay behind (see prepared-statements.ts).
        extra: { connectionTimeoutMillis: 5000, idleTimeoutMillis: endpoint.kind === 'pglite' ? 0 : 30000, keepAlive: true },
      }),
    }),
  ],
  providers: [ConnectionGuard, SchemaMigrationsRepository],
  exports: [SchemaMigrationsRepository],
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
