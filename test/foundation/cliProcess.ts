/**
 * Runs `affitrack` (from source, through tsx) as a real process and checks the CLI's error
 * contract: one line on stderr, the exit code, and with --json the error shape on stdout.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { CLI, ROOT } from '../chaos/service.js';

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Variables a child must not inherit from the test run: the command under test gets only what a test gives it. */
const INHERITED_SETTINGS = ['NODE_TEST_CONTEXT', 'DATABASE_URL', 'REDIS_URL', 'PORT', 'HOST', 'PUBLIC_URL', 'DATA_DIR'];

export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
  for (const name of INHERITED_SETTINGS) delete base[name];
  return { ...base, ...env };
}

/**
 * Runs the CLI; `fileSizeLimitKiB` runs it under `ulimit -f` (through sh), so a write past
 * that size fails (EFBIG) as on a full disk, without a file system of that size.
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  { fileSizeLimitKiB, ...options }: { uid?: number; gid?: number; fileSizeLimitKiB?: number } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const command = [process.execPath, '--import', 'tsx', CLI, ...args];
    const [file, ...argv] =
      fileSizeLimitKiB === undefined
        ? command
        : ['/bin/sh', '-c', `ulimit -f ${fileSizeLimitKiB} && exec "$@"`, 'sh', ...command];
    const child = spawn(file as string, argv, {
      cwd: ROOT,
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
      ...options,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Asserts a failure told the CLI's way: exit `exitCode`, exactly one `affitrack: …` line on
 * stderr and no stack frame; with --json, `{ error: { code, message } }` on stdout with the
 * same message, and nothing on stdout without it. Returns the message.
 */
export function assertFailure(
  result: Finished,
  expected: { exitCode: number; code: string; json: boolean; logsOnStdout?: boolean },
): string {
  const context = `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
  assert.equal(result.code, expected.exitCode, context);
  const lines = result.stderr.split('\n').filter((line) => line.length > 0);
  assert.equal(lines.length, 1, `one line on stderr: ${context}`);
  assert.match(lines[0] ?? '', /^affitrack: \S/, context);
  assert.doesNotMatch(result.stderr, /^\s+at /m, 'no stack trace');
  const message = (lines[0] ?? '').slice('affitrack: '.length);
  if (!expected.json) {
    if (!expected.logsOnStdout) assert.equal(result.stdout, '', `nothing on stdout without --json: ${context}`);
    return message;
  }
  // `serve` logs on stdout; any other command prints exactly one JSON object there.
  const printed = result.stdout.trim().split('\n');
  if (!expected.logsOnStdout) assert.equal(printed.length, 1, `one JSON object on stdout: ${context}`);
  assert.deepEqual(JSON.parse(printed.at(-1) ?? ''), { error: { code: expected.code, message } }, context);
  return message;
}
