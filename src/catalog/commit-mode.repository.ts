/**
 * How a catalog write's transaction commits. The SKU upserts turn `synchronous_commit` off for their
 * transaction (the catalog is a copy of the upstream's: a write lost in a crash is made again by the
 * next sync); a transaction that also records an unlisting turns it back on, so that the unlisting is
 * committed durably.
 */
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

type Db = Pick<EntityManager, 'query'>;

const COMMIT_DURABLY_SQL = "SELECT set_config('synchronous_commit', 'on', true)";

@Injectable()
export class CommitModeRepository {
  /** The transaction of `em` commits durably (waits for its WAL to be flushed), whatever it set before. */
  async commitDurably(em: Db): Promise<void> {
    await em.query(COMMIT_DURABLY_SQL);
  }
}
