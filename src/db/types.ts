/**
 * The types the storage layer's parts share, apart from `Database` itself, so that
 * groupCommit.ts and database.ts need not import each other.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Schema } from './schema.js';

export type Trx = Transaction<Schema>;
/** What repositories take: `db.read` for reads, or the `trx` of the caller's transaction. */
export type Queryable = Kysely<Schema>;
export type TransactWork<T> = (trx: Trx) => Promise<T>;
