import { Module } from '@nestjs/common';
import { MediaModule } from '../media/media.module.js';
import { RetentionRepository } from './retention.repository.js';
import { RetentionService } from './retention.service.js';

/** The retention job: deletes final rows older than RETENTION_DAYS (retention-policy.ts). */
@Module({
  imports: [MediaModule],
  providers: [RetentionRepository, RetentionService],
  exports: [RetentionService],
})
export class RetentionModule {}
