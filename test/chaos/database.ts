/**
 * A fresh database per chaos run — a SQLite directory, or a whole PostgreSQL database
 * (the server always uses `public`) — and direct, read-only inspection of it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { PG_URL } from '../helpers.js';

export type Kind = 'sqlite' | 'postgres';

export interface ChaosDatabase {
  kind: Kind;
  /** Environment that points the server and the CLI at this database. */
  env: Record<string, string>;
  dataDir: string;
  /** Read-only inspection (plain SQL, no parameters: both dialects accept it). */
  query<T = Record<string, unknown>>(text: string): Promise<T[]>;
  /** Closes the inspection connections (keeps the data). */
  close(): Promise<void>;
  /** Closes and deletes everything. */
  drop(): Promise<void>;
}

/** A fresh, empty database: a SQLite directory, or `CREATE DATABASE chaos_…` on `adminUrl`. */
export async function createDatabase(kind: Kind, adminUrl: string | null = PG_URL): Promise<ChaosDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-chaos-'));
  if (kind === 'sqlite') {
    const file = path.join(dataDir, 'affitrack.db');
    let db: SQLite.Database | null = null;
    const close = async () => {
      db?.close();
      db = null;
    };
    return {
      kind,
      env: { DATA_DIR: dataDir, DATABASE_URL: '' },
      dataDir,
      async query<T>(text: string) {
        if (!db) {
          if (!existsSync(file)) return [];
          db = new SQLite(file, { fileMustExist: true });
          db.pragma('busy_timeout = 5000');
        }
        return db.prepare(text).all() as T[];
      },
      close,
      async drop() {
        await close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  if (!adminUrl) throw new Error('no PostgreSQL URL');
  const name = `chaos_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  let pool: pg.Pool | null = null;
  const close = async () => {
    const p = pool;
    pool = null;
    await p?.end().catch(() => {});
  };
  return {
    kind,
    env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl },
    dataDir,
    async query<T>(text: string) {
      if (!pool) {
        pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
        pool.on('error', () => {});
      }
      return (await pool.query(text)).rows as T[];
    },
    close,
    async drop() {
      await close();
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
