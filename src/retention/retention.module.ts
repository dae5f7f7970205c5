import { Module } from '@nestjs/common';
import { RetentionRepository } from './retention.repository.js';
import { RetentionService } from './retention.service.js';

/** The retention job: deletes final rows older than RETENTION_DAYS (retention-policy.ts). */
@Module({
  providers: [RetentionRepository, RetentionService],
  exports: [RetentionService],
})
export class RetentionModule {}
