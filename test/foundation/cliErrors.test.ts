/**
 * The causes a command names when it fails, for failures a test machine cannot easily stage
 * as a real process (a privileged port, PostgreSQL refusing a password, a read-only SQLite
 * file). The common ones run as real processes in cli.test.ts and startupErrors.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXIT_FAILURE, EXIT_USER_ERROR, ListenError, toCommandError } from '../../src/cliErrors.js';
import { loadConfig } from '../../src/config.js';
import { ApiError } from '../../src/http/errors.js';

const sqlite = loadConfig({ DATA_DIR: '/srv/affitrack', PORT: '80' });
const postgres = loadConfig({ DATABASE_URL: 'postgres://app:hunter2@db.internal:6432/affitrack' });

function systemError(message: string, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(message), fields);
}

describe('what a failed command says', () => {
  it('names PORT when binding it needs privileges', () => {
    const cause = systemError('listen EACCES', { code: 'EACCES', syscall: 'listen', address: '0.0.0.0', port: 80 });
    const failure = toCommandError(new ListenError('PORT', 80, '0.0.0.0', cause), sqlite);
    assert.equal(failure.code, 'port_not_permitted');
    assert.equal(failure.exitCode, EXIT_FAILURE);
    assert.match(failure.message, /^PORT 80 on 0\.0\.0\.0 needs privileges/);
  });

  it('names METRICS_PORT when binding the metrics port needs privileges, even on the number PORT has', () => {
    const cause = systemError('listen EACCES', { code: 'EACCES', syscall: 'listen', address: '0.0.0.0', port: 80 });
    const failure = toCommandError(new ListenError('METRICS_PORT', 80, '0.0.0.0', cause), sqlite);
    assert.equal(failure.code, 'port_not_permitted');
    assert.equal(
      failure.message,
      'METRICS_PORT 80 on 0.0.0.0 needs privileges this process does not have: set METRICS_PORT to 1024 or above',
    );
  });

  it('names HOST when it is not an address of this machine', () => {
    const cause = systemError('listen EADDRNOTAVAIL', {
      code: 'EADDRNOTAVAIL',
      syscall: 'listen',
      address: '192.0.2.1',
      port: 80,
    });
    const failure = toCommandError(new ListenError('PORT', 80, '192.0.2.1', cause), sqlite);
    assert.equal(failure.code, 'host_unavailable');
    assert.equal(failure.message, 'HOST 192.0.2.1 is not an address of this machine');
  });

  it('names HOST when looking its name up failed for the time being', () => {
    const cause = systemError('getaddrinfo EAI_AGAIN api.internal', { code: 'EAI_AGAIN', syscall: 'getaddrinfo' });
    const failure = toCommandError(new ListenError('PORT', 80, 'api.internal', cause), sqlite);
    assert.deepEqual([failure.code, failure.exitCode], ['host_unavailable', EXIT_FAILURE]);
    assert.equal(
      failure.message,
      'HOST api.internal cannot be resolved (host name lookup failed): set HOST to a name or address of this machine',
    );
  });

  it('names DATABASE_URL, not its password, when PostgreSQL refuses the login', () => {
    const failure = toCommandError(
      systemError('password authentication failed for user "app"', { code: '28P01' }),
      postgres,
    );
    assert.equal(failure.code, 'database_unavailable');
    assert.equal(
      failure.message,
      'cannot use PostgreSQL at db.internal:6432/affitrack (DATABASE_URL): password authentication failed for user "app"',
    );
  });

  it('says "connection refused" when every address of the host refused (an AggregateError without a message)', () => {
    const refused = Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' });
    assert.match(toCommandError(refused, postgres).message, /\(DATABASE_URL\): connection refused$/);
  });

  it('names DATA_DIR when the SQLite file is read-only', () => {
    const failure = toCommandError(
      systemError('attempt to write a readonly database', { code: 'SQLITE_READONLY' }),
      sqlite,
    );
    assert.equal(
      failure.message,
      'cannot use the SQLite database in /srv/affitrack (DATA_DIR): attempt to write a readonly database',
    );
  });

  it("treats a 4xx of a service as the user's to fix and anything else as unexpected", () => {
    const conflict = toCommandError(ApiError.conflict('A dashboard user with this email already exists.'), sqlite);
    assert.deepEqual([conflict.code, conflict.exitCode], ['conflict', EXIT_USER_ERROR]);
    const bug = toCommandError(new TypeError("Cannot read properties of undefined (reading 'id')"), sqlite);
    assert.deepEqual([bug.code, bug.exitCode], ['internal_error', EXIT_FAILURE]);
    assert.equal(bug.message, "unexpected error: Cannot read properties of undefined (reading 'id')");
    const notOurs = toCommandError(systemError('EACCES', { code: 'EACCES', path: '/etc/affitrack.conf' }), sqlite);
    assert.equal(notOurs.code, 'internal_error', 'a file outside DATA_DIR is not the database');
  });
});
