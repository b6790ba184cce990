/**
 * The OpenAPI document without a running server or a network: builds the app on a
 * throw-away SQLite directory and asks @fastify/swagger for the document.
 *
 *   tsx scripts/openapi.ts lint         Redocly's recommended rules; silent when clean (part of `npm run lint`)
 *   tsx scripts/openapi.ts write FILE   the JSON document, e.g. for `npx openapi-typescript FILE -o api.d.ts`
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { closeContext, createContext } from '../src/runtime.js';

async function openApiDocument(): Promise<unknown> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'affitrack-openapi-'));
  try {
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
    const ctx = createContext(config);
    const app = await buildApp(ctx);
    try {
      await app.ready();
      return app.swagger();
    } finally {
      await app.close();
      await closeContext(ctx);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Redocly's recommended rules on the document; its report is printed only when it finds something. */
function lint(file: string): number {
  const cli = path.resolve('node_modules/@redocly/cli/bin/cli.js');
  const result = spawnSync(process.execPath, [cli, 'lint', '--extends=recommended', '--format=codeframe', file], {
    encoding: 'utf8',
    // Offline and quiet: no usage report, no update check (the lint runs without a network).
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
  });
  const output = `${result.stdout}${result.stderr}`;
  // Redocly exits 0 on warnings: a clean document is one with no warning either.
  const clean = result.status === 0 && /Your API description is valid/.test(output) && !/warning/i.test(report(output));
  if (!clean)
    process.stderr.write(`openapi: @redocly/cli lint --extends=recommended found problems\n${report(output)}`);
  return clean ? 0 : 1;
}

/** Redocly's output without its banners (e.g. a notice about the Node.js version). */
function report(output: string): string {
  return output
    .split('\n')
    .filter((line) => !/[║╔╚]/.test(line))
    .join('\n');
}

const [command, target] = process.argv.slice(2);
const document = await openApiDocument();
if (command === 'write' && target) {
  writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`);
} else if (command === 'lint') {
  const dir = mkdtempSync(path.join(tmpdir(), 'affitrack-openapi-lint-'));
  const file = path.join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(document, null, 2));
  const status = lint(file);
  rmSync(dir, { recursive: true, force: true });
  process.exitCode = status;
} else {
  process.stderr.write('usage: tsx scripts/openapi.ts lint | write FILE\n');
  process.exitCode = 2;
}
