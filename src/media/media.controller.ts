/**
 * `GET /media/{file}` (no token): a mirrored product image, `<sha256>.<ext>`, from the database (any
 * replica serves any image). The name is the SHA-256 of the bytes, so the answer never changes: it is
 * cacheable forever. An image is served as an image only (`nosniff`), and sandboxed should a browser
 * open an SVG on its own.
 */
import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AppError } from '../common/app-error.js';
import { ApiErrors, apiError } from '../ops/api-docs.js';
import { MediaRepository } from './media.repository.js';

const FILE_NAME = /^([0-9a-f]{64})\.([a-z0-9]{1,10})$/;
export const MEDIA_CACHE_CONTROL = 'public, max-age=31536000, immutable';

@ApiTags('catalog')
@Controller('media')
export class MediaController {
  constructor(private readonly media: MediaRepository) {}

  @Get(':file')
  @ApiOperation({
    summary: 'A mirrored product image',
    description:
      'The bytes and content type of a product image the sync mirrored (MEDIA_MIRROR), named by the SHA-256 of its ' +
      'bytes: cacheable forever. No token. ' +
      'Product `images` and the `<img src>` of `content` name these URLs (MEDIA_PUBLIC_URL + `/<sha256>.<ext>`, default ' +
      'relative `/media/<sha256>.<ext>`).',
  })
  @ApiParam({
    name: 'file',
    description: '`<sha256>.<ext>`',
    example: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.png',
  })
  @ApiProduces('image/*')
  @ApiOkResponse({
    description: 'the image (its bytes, with its own Content-Type)',
    schema: { type: 'string', format: 'binary' },
    example: '(the image bytes)',
  })
  @ApiErrors(apiError(404, 'media_not_found', 'no mirrored image 0000000000000000000000000000000000000000000000000000000000000000.png'))
  async get(@Param('file') file: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<Buffer> {
    const m = FILE_NAME.exec(file);
    const found = m ? await this.media.file(m[1], m[2]) : null;
    if (!found) throw new AppError('media_not_found', `no mirrored image ${file}`);
    void reply
      .header('content-type', found.content_type)
      .header('cache-control', MEDIA_CACHE_CONTROL)
      .header('etag', `"${found.sha256}"`)
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    return found.data;
  }
}
