import { type Kysely, sql } from 'kysely';
import { sealAnswer, sealingKeyOf, storedKeyOf } from '../idempotencyAtRest.js';

interface KeyRow {
  scope: string;
  key: string;
  fingerprint: string;
  status_code: number | null;
  response_body: string | null;
  work_committed: number;
  locked_until: number;
  created_at: number;
}

/** Rows copied per statement: memory stays bounded however many keys the last 24 hours hold. */
const PAGE = 500;

/**
 * Idempotency keys and their answers at rest (db/idempotencyAtRest.ts): a stored answer held a
 * portal invite link in clear, whose token the invites table keeps only as a hash. The keys of
 * the last 24 hours are kept, so a retry across the upgrade still replays: they are copied
 * page by page into a new table, each key as its hash and each answer sealed, and the new
 * table takes the old one's place.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys_sealed')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('work_committed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_sealed_pk', ['scope', 'key'])
    .execute();
  const table = sql.table('idempotency_keys');
  for (let after: KeyRow | undefined; ; ) {
    const from = after ? sql`where (scope, key) > (${after.scope}, ${after.key})` : sql``;
    const { rows } = await sql<KeyRow>`select * from ${table} ${from} order by scope, key limit ${PAGE}`.execute(db);
    if (rows.length === 0) break;
    const sealed = rows.map((row) => ({
      ...row,
      key: storedKeyOf(row.key),
      response_body:
        row.response_body === null ? null : sealAnswer(sealingKeyOf(row.scope, row.key), row.response_body),
    }));
    await (db as Kysely<{ idempotency_keys_sealed: KeyRow }>)
      .insertInto('idempotency_keys_sealed')
      .values(sealed)
      .execute();
    after = rows.at(-1);
  }
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.alterTable('idempotency_keys_sealed').renameTo('idempotency_keys').execute();
  await db.schema.createIndex('idempotency_keys_created_idx').on('idempotency_keys').column('created_at').execute();
}
