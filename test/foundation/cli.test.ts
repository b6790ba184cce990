import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { closeContext, createContext } from '../../src/runtime.js';

const run = promisify(execFile);
const CLI = path.resolve('src/cli.ts');

describe('affitrack CLI', () => {
  let dataDir: string;
  const cli = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', CLI, ...args], {
      env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'info' },
    });

  before(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-cli-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('brands create --json writes exactly one JSON object with the brand and its key', async () => {
    const { stdout } = await cli('brands', 'create', '--name', 'Acme Shoes', '--timezone', 'Europe/Paris', '--json');
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const out = JSON.parse(lines[0] ?? '');
    assert.match(out.brand.id, /^brd_/);
    assert.equal(out.brand.name, 'Acme Shoes');
    assert.equal(out.brand.slug, 'acme-shoes');
    assert.equal(out.brand.timezone, 'Europe/Paris');
    assert.match(out.apiKey, /^afk_/);
  });

  it('keys create, list and revoke, and a revoked key gets 401', async () => {
    const { stdout: created } = await cli('brands', 'create', '--name', 'Keys Co', '--json');
    const brandId = JSON.parse(created).brand.id;
    const { stdout: keyOut } = await cli('keys', 'create', '--brand', brandId, '--name', 'ci', '--json');
    const key = JSON.parse(keyOut);
    assert.match(key.key.id, /^key_/);
    assert.equal(key.key.prefix, key.apiKey.slice(0, key.key.prefix.length));
    assert.equal(JSON.stringify(key.key).includes(key.apiKey), false, 'the listing never holds the secret');

    const { stdout: listOut } = await cli('keys', 'list', '--brand', brandId, '--json');
    const listed = JSON.parse(listOut).keys;
    assert.equal(listed.length, 2);
    assert.ok(!listOut.includes(key.apiKey));

    const ctx = createContext(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    const app = await buildApp(ctx);
    try {
      const ok = await app.inject({ url: '/api/v1/brand', headers: { authorization: `Bearer ${key.apiKey}` } });
      assert.equal(ok.statusCode, 200);
      const { stdout: revokeOut } = await cli('keys', 'revoke', key.key.id, '--json');
      assert.ok(JSON.parse(revokeOut).key.revokedAt);
      const denied = await app.inject({ url: '/api/v1/brand', headers: { authorization: `Bearer ${key.apiKey}` } });
      assert.equal(denied.statusCode, 401);
    } finally {
      await app.close();
      await closeContext(ctx);
    }
  });

  it('stops with a message naming a badly configured variable', async () => {
    await assert.rejects(
      run(process.execPath, ['--import', 'tsx', CLI, 'migrate'], {
        env: { ...process.env, DATA_DIR: dataDir, PORT: 'eighty' },
      }),
      (error: { code: number; stderr: string }) => {
        assert.match(error.stderr, /PORT/);
        assert.notEqual(error.code, 0);
        return true;
      },
    );
  });
});
