import { Module } from '@nestjs/common';
import { MediaController } from './media.controller.js';
import { MediaFetcher } from './media-fetcher.js';
import { MediaRepository } from './media.repository.js';

/** Mirrored product images: their downloads, their storage, and `GET /media/{file}`. */
@Module({
  controllers: [MediaController],
  providers: [MediaFetcher, MediaRepository],
  exports: [MediaFetcher, MediaRepository],
})
export class MediaModule {}
