/**
 * PostgreSQL parses and plans a statement sent without a name anew at every run, and pg
 * sends Kysely's queries without one. On the hot paths that parse and plan was a large part
 * of the server's work: naming the statements (one prepared statement per SQL text and
 * connection) took PostgreSQL conversion ingest from ~3,000 to ~3,500 a second on this
 * machine, and a webhook burst from ~1,550 to ~1,730 deliveries a second.
 *
 * Only statements with parameters are named (the application's queries; DDL, BEGIN and
 * COMMIT have none), and of those only the ones with few parameters: Kysely writes one text
 * per length of an `IN (…)` list, and such variants would fill the budget of MAX_NAMED texts
 * per pool with statements rarely run twice. A prepared statement whose result type a schema
 * change altered (another process migrating: SQLSTATE 0A000, "cached plan must not change
 * result type"), or that the server no longer has (26000, e.g. after a pooler's DISCARD ALL),
 * is prepared again under a new name: at once outside a transaction; inside one the
 * transaction has failed, and the next one prepares it anew.
 *
 * A named statement may run with PostgreSQL's generic plan after five runs, where the plan of
 * an unnamed one always fits the values; PostgreSQL takes the generic plan only when its
 * estimate is not worse. DATABASE_NAMED_STATEMENTS=false turns naming off (a pooler in
 * transaction mode that keeps no prepared statements needs that).
 */
import type pg from 'pg';

/** Distinct SQL texts named per pool; the application issues a few hundred at most. */
const MAX_NAMED = 500;
/** Texts with more parameters than this (long `IN (…)` lists) are sent unnamed. */
const MAX_PARAMETERS = 32;

/** The prepared statement cannot serve any more: prepare the text anew under a new name. */
function isStale(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  if (code === '26000') return true;
  return code === '0A000' && /cached plan must not change result type/.test(message ?? '');
}
const BEGINS = /^\s*(begin|start\s+transaction)\b/i;
const ENDS = /^\s*(commit|end|rollback(?!\s+to\b))\b/i;

type Query = (text: string, values?: unknown[]) => Promise<pg.QueryResult>;

/** Makes every connection `pool` opens run parameterised statements as named prepared statements. */
export function nameStatements(pool: pg.Pool): void {
  const names = new Map<string, string>();
  let made = 0;
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMED) {
      made += 1;
      name = `affitrack_${made}`;
      names.set(text, name);
    }
    return name;
  };

  pool.on('connect', (client) => {
    const query = client.query.bind(client) as unknown as (
      config: unknown,
      values?: unknown,
    ) => Promise<pg.QueryResult>;
    let inTransaction = false;
    const named: Query = async (text, values) => {
      if (values === undefined || values.length === 0) {
        if (BEGINS.test(text)) inTransaction = true;
        else if (ENDS.test(text)) inTransaction = false;
        return query(text, values);
      }
      const name = values.length <= MAX_PARAMETERS ? nameOf(text) : undefined;
      if (name === undefined) return query(text, values);
      try {
        return await query({ name, text, values });
      } catch (error) {
        if (!isStale(error)) throw error;
        // The next run prepares the text under a new name; the stale one is never used again.
        if (names.get(text) === name) names.delete(text);
        const fresh = nameOf(text);
        if (inTransaction || fresh === undefined) throw error;
        return query({ name: fresh, text, values });
      }
    };
    // Kysely calls `query(text, values)` and awaits the result; other call forms pass through.
    client.query = ((config: unknown, values?: unknown, callback?: unknown) =>
      typeof config === 'string' && Array.isArray(values) && callback === undefined
        ? named(config, values)
        : (query as (...args: unknown[]) => unknown)(config, values, callback)) as typeof client.query;
  });
}
