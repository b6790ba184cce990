import { type Kysely, sql } from 'kysely';
import { sealAnswer, sealingKeyOf, storedKeyOf } from '../idempotencyAtRest.js';

interface KeyRow {
  scope: string;
  key: string;
  response_body: string | null;
}

/**
 * Idempotency keys and their answers at rest (db/idempotencyAtRest.ts): a stored answer held a
 * portal invite link in clear, whose token the invites table keeps only as a hash. The keys of
 * the last 24 hours are kept, so a retry across the upgrade still replays: each key is replaced
 * by its hash and its answer sealed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const rows = (await sql<KeyRow>`select scope, key, response_body from idempotency_keys`.execute(db)).rows;
  for (const row of rows) {
    const body = row.response_body === null ? null : sealAnswer(sealingKeyOf(row.scope, row.key), row.response_body);
    await sql`
      update idempotency_keys set key = ${storedKeyOf(row.key)}, response_body = ${body}
      where scope = ${row.scope} and key = ${row.key}`.execute(db);
  }
}
