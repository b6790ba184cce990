/**
 * Queries compiled once and run many times. Building and compiling a Kysely query costs
 * ~30 µs here — more than SQLite takes to run a point lookup — so the hot paths (API key
 * lookup, tracking link, conversion ingest) compile their fixed-shape queries once per
 * database handle and only swap in the parameter values.
 *
 * The builder is called with sentinel strings in place of the parameters; in the compiled
 * query each sentinel is found among the parameters and replaced by the value given. The
 * compiled SQL is kept per dialect, so transactions share it too.
 *
 * On SQLite a prepared query runs straight on the better-sqlite3 statement of the handle it
 * is given (the read connection, or the writer inside a group-commit batch): the same
 * statement Kysely would run, without the connection mutex and promise hops around it.
 * Writes to cached tables still go through Kysely, where the change watch sees them.
 */
import type SQLite from 'better-sqlite3';
import { type Compilable, CompiledQuery, type Kysely } from 'kysely';
import { writesCachedTable } from './changes.js';
import type { Schema } from './schema.js';

const SENTINEL = '\u0001prepared-parameter-';

type Build<A extends unknown[], O> = (q: Kysely<Schema>, ...args: A) => Compilable<O>;

/** better-sqlite3 connections behind Kysely handles (and batch transactions) that may be used directly. */
const sqliteConnections = new WeakMap<object, SQLite.Database>();

/** Lets prepared queries given `q` run directly on `connection`, the one `q` executes on. */
export function runPreparedDirectly(q: Kysely<Schema>, connection: SQLite.Database): void {
  sqliteConnections.set(q, connection);
}

interface Compiled<O> {
  query: CompiledQuery<O>;
  /** For each parameter: the argument index it takes, or -1 for a constant kept as compiled. */
  slots: number[];
  direct: boolean;
}

export class PreparedQuery<A extends unknown[], O> {
  /** By dialect adapter class: the SQL is the same for every handle (and transaction) of a dialect. */
  private readonly compiled = new Map<unknown, Compiled<O>>();
  private readonly statements = new WeakMap<SQLite.Database, SQLite.Statement>();

  constructor(
    private readonly arity: A['length'],
    private readonly build: Build<A, O>,
  ) {}

  private compile(q: Kysely<Schema>): Compiled<O> {
    const dialect = q.getExecutor().adapter.constructor;
    let compiled = this.compiled.get(dialect);
    if (!compiled) {
      const sentinels = Array.from({ length: this.arity }, (_, i) => `${SENTINEL}${i}`) as unknown as A;
      const query = this.build(q, ...sentinels).compile();
      const slots = query.parameters.map((p) =>
        typeof p === 'string' && p.startsWith(SENTINEL) ? Number(p.slice(SENTINEL.length)) : -1,
      );
      compiled = { query, slots, direct: !writesCachedTable(query.sql) };
      this.compiled.set(dialect, compiled);
    }
    return compiled;
  }

  private parameters(compiled: Compiled<O>, args: A): unknown[] {
    const { slots, query } = compiled;
    const parameters = new Array(slots.length);
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as number;
      parameters[i] = slot < 0 ? query.parameters[i] : args[slot];
    }
    return parameters;
  }

  async execute(q: Kysely<Schema>, ...args: A): Promise<O[]> {
    const compiled = this.compile(q);
    const parameters = this.parameters(compiled, args);
    const connection = compiled.direct ? sqliteConnections.get(q) : undefined;
    if (connection) return this.runDirectly(connection, compiled, parameters);
    const result = await q.executeQuery(CompiledQuery.raw(compiled.query.sql, parameters) as CompiledQuery<O>);
    return result.rows;
  }

  private runDirectly(connection: SQLite.Database, compiled: Compiled<O>, parameters: unknown[]): O[] {
    let statement = this.statements.get(connection);
    if (!statement) {
      statement = connection.prepare(compiled.query.sql);
      this.statements.set(connection, statement);
    }
    if (statement.reader) return statement.all(parameters) as O[];
    statement.run(parameters);
    return [];
  }

  async first(q: Kysely<Schema>, ...args: A): Promise<O | undefined> {
    return (await this.execute(q, ...args))[0];
  }
}

/** `prepared(2, (q, a: string, b: number) => q.selectFrom(…).where(…a…b…))`. */
export function prepared<A extends unknown[], O>(arity: A['length'], build: Build<A, O>): PreparedQuery<A, O> {
  return new PreparedQuery(arity, build);
}

/**
 * A prepared INSERT of one row into `table`, naming its columns once. `finish` may add
 * ON CONFLICT or RETURNING to the builder.
 */
export function preparedInsert<R extends object, O = unknown>(
  table: keyof Schema & string,
  columns: ReadonlyArray<keyof R & string>,
  finish: (insert: InsertOf) => Compilable<O> = (insert) => insert,
) {
  const query = prepared(columns.length, (q, ...values: unknown[]) =>
    finish(q.insertInto(table).values(Object.fromEntries(columns.map((c, i) => [c, values[i]])) as never)),
  );
  return {
    execute: (q: Kysely<Schema>, row: R): Promise<O[]> =>
      query.execute(q, ...columns.map((c) => (row as Record<string, unknown>)[c])),
  };
}

type InsertOf = ReturnType<ReturnType<Kysely<Schema>['insertInto']>['values']>;
