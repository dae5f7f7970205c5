import { Global, Module } from '@nestjs/common';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { SuppliersModule } from '../suppliers/suppliers.module.js';
import { UpstreamClient } from './upstream.client.js';

/**
 * Binds the upstream port to the env supplier's budgeted client (src/suppliers builds each
 * supplier's: its own budget over its own HTTP adapter, configured from §3/§4 or the supplier's
 * settings). Code that serves several suppliers asks the SupplierRegistry for the supplier's client.
 */
@Global()
@Module({
  imports: [SuppliersModule],
  providers: [{ provide: UpstreamClient, inject: [SupplierRegistry], useFactory: (registry: SupplierRegistry) => registry.env.client }],
  exports: [UpstreamClient],
})
export class UpstreamModule {}
