import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { closeContext, createContext } from '../../src/runtime.js';
import { ROOT } from '../chaos/service.js';
import { assertFailure, runCli } from './cliProcess.js';

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

  it('brands create stores a time zone typed in any case in its IANA spelling', async () => {
    const { stdout } = await cli('brands', 'create', '--name', 'Lower Zone', '--timezone', 'europe/paris', '--json');
    assert.equal(JSON.parse(stdout).brand.timezone, 'Europe/Paris');
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

  it('prints its version, as text and as JSON', async () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const text = await runCli(['--version'], { DATA_DIR: dataDir });
    assert.deepEqual(text, { code: 0, stdout: `${version}\n`, stderr: '' });
    const json = await runCli(['--version', '--json'], { DATA_DIR: dataDir });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), { version });
  });

  // --help wins wherever it stands, over what the command line would otherwise be refused for.
  describe('--help anywhere', { concurrency: 4 }, () => {
    const asks = [
      { args: ['serve', 'extra', '--help'], shows: ['affitrack serve [--role all|api|worker]'] },
      { args: ['serve', '--role', 'boss', '-h'], shows: ['affitrack serve [--role all|api|worker]'] },
      { args: ['backup', 'a.db', 'b.db', '--help'], shows: ['affitrack backup FILE [--json]'] },
      { args: ['brands', 'create', '--name', '--help'], shows: ['affitrack brands create --name N'] },
      { args: ['keys', 'list', '--colour', 'red', '--json', '--help'], shows: ['affitrack keys list --brand ID'] },
      {
        args: ['keys', '--help'],
        shows: ['affitrack keys create', 'affitrack keys list', 'affitrack keys revoke KEY_ID'],
      },
      { args: ['launch', '--help'], shows: ['Usage: affitrack <command> [options]', 'Commands:'] },
      { args: ['--help', 'serve'], shows: ['affitrack serve [--role all|api|worker]'] },
    ];
    for (const { args, shows } of asks) {
      it(`"${args.join(' ')}" prints the command's help and exits 0, doing nothing`, async () => {
        const own = mkdtempSync(path.join(tmpdir(), 'affitrack-cli-help-'));
        try {
          // A bad variable too: help needs no configuration.
          const result = await runCli(args, { DATA_DIR: own, PORT: 'eighty' });
          assert.equal(result.code, 0, result.stderr);
          assert.equal(result.stderr, '');
          for (const line of shows) assert.ok(result.stdout.includes(line), `${line} in:\n${result.stdout}`);
          assert.match(result.stdout, /Exit codes: 0 done/);
          if (args[0] !== 'launch') assert.doesNotMatch(result.stdout, /affitrack migrate/, 'only that command');
          assert.deepEqual(readdirSync(own), [], 'nothing was done');
        } finally {
          rmSync(own, { recursive: true, force: true });
        }
      });
    }
    it('takes --help after -- as a word (a FILE of that name), not a request for help', async () => {
      const result = await runCli(['backup', '--', '--help', '--json'], { DATA_DIR: dataDir });
      assert.notEqual(result.code, 0);
      assert.doesNotMatch(result.stdout, /Usage/);
    });
  });

  const userErrors: Array<{ what: string; args: string[]; code: string; env?: Record<string, string> }> = [
    {
      what: 'an invalid time zone',
      args: ['brands', 'create', '--name', 'X', '--timezone', 'Mars/Base'],
      code: 'validation_error',
    },
    {
      what: 'an invalid currency',
      args: ['brands', 'create', '--name', 'X', '--currency', 'EURO'],
      code: 'validation_error',
    },
    { what: 'a missing required option', args: ['brands', 'create'], code: 'usage_error' },
    { what: 'an unknown command', args: ['launch'], code: 'usage_error' },
    { what: 'an unknown option', args: ['brands', 'create', '--name', 'X', '--colour', 'red'], code: 'usage_error' },
    { what: 'an option without its value', args: ['brands', 'create', '--name'], code: 'usage_error' },
    { what: 'an unknown role', args: ['serve', '--role', 'boss'], code: 'usage_error' },
    // On SQLite one server does both: an API alone never sends a webhook, and its worker is refused.
    { what: 'an api role on SQLite', args: ['serve', '--role', 'api'], code: 'invalid_config' },
    { what: 'a worker role on SQLite', args: ['serve', '--role', 'worker'], code: 'invalid_config' },
    { what: 'an unknown brand', args: ['keys', 'list', '--brand', 'brd_missing'], code: 'not_found' },
    { what: 'an unknown key', args: ['keys', 'revoke', 'key_missing'], code: 'not_found' },
    {
      what: 'a rate limit of 0',
      args: ['keys', 'create', '--brand', 'brd_x', '--rate-limit', '0'],
      code: 'usage_error',
    },
    {
      what: 'a rate limit beyond a billion',
      args: ['keys', 'create', '--brand', 'brd_x', '--rate-limit', '99999999999999999999'],
      code: 'usage_error',
    },
    {
      what: 'a malformed email',
      args: ['users', 'create', '--brand', 'brd_x', '--email', 'nobody'],
      code: 'validation_error',
    },
    { what: 'a badly configured variable', args: ['migrate'], code: 'invalid_config', env: { PORT: 'eighty' } },
    // Names follow the API's rules (its schema and messages): the API refuses these with 422.
    { what: 'a blank brand name', args: ['brands', 'create', '--name', '   '], code: 'validation_error' },
    { what: 'an empty brand name', args: ['brands', 'create', '--name', ''], code: 'validation_error' },
    {
      what: 'a brand name of 300 characters',
      args: ['brands', 'create', '--name', 'a'.repeat(300)],
      code: 'validation_error',
    },
    {
      what: 'a blank key name',
      args: ['keys', 'create', '--brand', 'brd_x', '--name', '   '],
      code: 'validation_error',
    },
    { what: 'an empty key name', args: ['keys', 'create', '--brand', 'brd_x', '--name', ''], code: 'validation_error' },
    // An option of another command is refused, not ignored.
    { what: 'an option of another command (migrate)', args: ['migrate', '--role', 'worker'], code: 'usage_error' },
    { what: 'an option of another command (backup)', args: ['backup', 'x.db', '--name', 'foo'], code: 'usage_error' },
    {
      what: 'an option of another command (brands create)',
      args: ['brands', 'create', '--name', 'C', '--email', 'a@b.c'],
      code: 'usage_error',
    },
  ];
  // Each case is a process of its own; they touch nothing of each other's, so run four at once.
  describe('user errors', { concurrency: 4 }, () => {
    for (const { what, args, code, env } of userErrors) {
      it(`answers ${what} with one line on stderr, exit code 2 and, with --json, ${code} on stdout`, async () => {
        const result = await runCli([...args, '--json'], { DATA_DIR: dataDir, ...env });
        const message = assertFailure(result, { exitCode: 2, code, json: true });
        if (env?.PORT) assert.match(message, /PORT/);
      });
    }
  });

  it('refuses keys revoke with two ids, naming the second, and revokes neither', async () => {
    const { stdout: created } = await cli('brands', 'create', '--name', 'Leaky Co', '--json');
    const brandId = JSON.parse(created).brand.id;
    const ids: string[] = [];
    for (const name of ['leak1', 'leak2']) {
      const { stdout } = await cli('keys', 'create', '--brand', brandId, '--name', name, '--json');
      ids.push(JSON.parse(stdout).key.id);
    }
    const result = await runCli(['keys', 'revoke', ...ids, '--json'], { DATA_DIR: dataDir });
    const message = assertFailure(result, { exitCode: 2, code: 'usage_error', json: true });
    assert.ok(message.includes(`unexpected argument "${ids[1]}"`), message);
    const { stdout: listOut } = await cli('keys', 'list', '--brand', brandId, '--json');
    const leaked = JSON.parse(listOut).keys.filter((k: { id: string }) => ids.includes(k.id));
    assert.equal(leaked.length, 2);
    for (const key of leaked) assert.equal(key.revokedAt, null, `${key.id} left as it was`);
  });

  it("refuses keys revoke --brand rather than revoke another brand's key", async () => {
    const brandIds: string[] = [];
    for (const name of ['Brand A', 'Brand B']) {
      const { stdout } = await cli('brands', 'create', '--name', name, '--json');
      brandIds.push(JSON.parse(stdout).brand.id);
    }
    const [brandA = '', brandB = ''] = brandIds;
    const { stdout: created } = await cli('keys', 'create', '--brand', brandA, '--name', 'a-key', '--json');
    const keyId = JSON.parse(created).key.id;
    const result = await runCli(['keys', 'revoke', keyId, '--brand', brandB, '--json'], { DATA_DIR: dataDir });
    const message = assertFailure(result, { exitCode: 2, code: 'usage_error', json: true });
    assert.match(message, /--brand/);
    const { stdout: listOut } = await cli('keys', 'list', '--brand', brandA, '--json');
    const key = JSON.parse(listOut).keys.find((k: { id: string }) => k.id === keyId);
    assert.equal(key?.revokedAt, null, "brand A's key is left as it was");
  });

  it('names the rule the API gives for a blank or overlong name, and stores nothing', async () => {
    const before = JSON.parse((await cli('brands', 'create', '--name', 'Names Co', '--json')).stdout);
    const blank = await runCli(['brands', 'create', '--name', '   '], { DATA_DIR: dataDir });
    assert.equal(
      assertFailure(blank, { exitCode: 2, code: 'validation_error', json: false }),
      'Validation failed: name: must not be blank.',
    );
    const long = await runCli(['brands', 'create', '--name', 'a'.repeat(300)], { DATA_DIR: dataDir });
    assert.equal(
      assertFailure(long, { exitCode: 2, code: 'validation_error', json: false }),
      'Validation failed: name: must be at most 200 characters long.',
    );
    const blankKey = await runCli(['keys', 'create', '--brand', before.brand.id, '--name', ' '], { DATA_DIR: dataDir });
    assertFailure(blankKey, { exitCode: 2, code: 'validation_error', json: false });
    const { stdout } = await cli('keys', 'list', '--brand', before.brand.id, '--json');
    assert.equal(JSON.parse(stdout).keys.length, 1, 'only the first key');
  });

  describe('surplus arguments', { concurrency: 4 }, () => {
    const surplus = [
      { args: ['serve', 'extra'], word: 'extra' },
      { args: ['migrate', 'extra'], word: 'extra' },
      { args: ['backup', 'copy.db', 'extra'], word: 'extra' },
      { args: ['brands', 'create', 'extra', '--name', 'Y'], word: 'extra' },
      { args: ['brands', 'create', '--name', 'Acme', 'Inc'], word: 'Inc' },
      { args: ['users', 'create', 'extra', '--brand', 'brd_x', '--email', 'a@example.com'], word: 'extra' },
      { args: ['keys', 'list', 'extra', '--brand', 'brd_x'], word: 'extra' },
      { args: ['keys', 'create', 'extra', '--brand', 'brd_x'], word: 'extra' },
    ];
    for (const { args, word } of surplus) {
      it(`refuses "${args.join(' ')}" with a usage error naming "${word}"`, async () => {
        const own = mkdtempSync(path.join(tmpdir(), 'affitrack-cli-surplus-'));
        try {
          const result = await runCli([...args, '--json'], { DATA_DIR: own });
          const message = assertFailure(result, { exitCode: 2, code: 'usage_error', json: true });
          assert.ok(message.includes(`unexpected argument "${word}"`), message);
          assert.deepEqual(readdirSync(own), [], 'nothing was done: not even a database created');
        } finally {
          rmSync(own, { recursive: true, force: true });
        }
      });
    }
  });

  it('without --json prints the same one line and nothing on stdout, naming what is allowed', async () => {
    const result = await runCli(['brands', 'create', '--name', 'X', '--timezone', 'Mars/Base'], { DATA_DIR: dataDir });
    assert.match(assertFailure(result, { exitCode: 2, code: 'validation_error', json: false }), /timezone.*IANA/);
  });
});
