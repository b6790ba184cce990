/** This deployment's id (migration 0035): the same for every process on its database. */
import type { Database } from './database.js';

export async function readDeploymentId(db: Database): Promise<string> {
  const row = await db.read.selectFrom('deployment').select('id').executeTakeFirstOrThrow();
  return row.id;
}
