/** Dashboard users: people of a brand who sign in to the console with email and password. */
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { ConflictError, InvalidError, NotFoundError } from '../../errors.js';
import { newId } from '../../ids.js';
import { findBrandById } from '../brands/repository.js';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function generatePassword(): string {
  return randomBytes(12).toString('base64url');
}

export async function createUser(
  ctx: AppContext,
  input: { brandId: string; email: string; password: string },
): Promise<{ id: string; brandId: string; email: string }> {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL.test(email)) throw InvalidError.at('email', 'must be an email address');
  if (input.password.length < MIN_PASSWORD_LENGTH) {
    throw InvalidError.at('password', `must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  if (input.password.length > MAX_PASSWORD_LENGTH) {
    throw InvalidError.at('password', `must be at most ${MAX_PASSWORD_LENGTH} characters`);
  }
  if (!(await findBrandById(ctx.db.read, input.brandId))) throw new NotFoundError('Brand');
  const passwordHash = await hashPassword(input.password);
  return ctx.db.transact(async (trx) => {
    const taken = await trx.selectFrom('dashboard_users').select('id').where('email', '=', email).executeTakeFirst();
    if (taken) throw new ConflictError('A dashboard user with this email already exists.');
    const now = ctx.clock.now();
    const id = newId('usr', now);
    await trx
      .insertInto('dashboard_users')
      .values({ id, brand_id: input.brandId, email, password_hash: passwordHash, created_at: now, last_login_at: null })
      .execute();
    return { id, brandId: input.brandId, email };
  });
}
