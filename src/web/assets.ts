/**
 * Static files (stylesheets, scripts, icons) served by @fastify/static under names that
 * carry their content hash (`app.css` → `app.3f2a9c1b7e4d.css`), computed once at start-up.
 * A changed file gets a new URL, so browsers may keep every copy for a year. The files live
 * beside the code that uses them and are copied to dist/ by the build (scripts/copy-assets.mjs).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

/** 48 bits of SHA-256: collisions between two releases of one file are not a concern. */
const HASH_LENGTH = 12;
const ONE_YEAR_MS = 365 * 24 * 3600 * 1000;

export interface HashedAssets<Name extends string> {
  /** The URL of a file, content hash included. */
  url(name: Name): string;
  /** Serves the files; register it with the `prefix` that makes the URLs above. */
  plugin: FastifyPluginAsyncTypebox;
}

/** `directory` holds `names`; `urlPath` is where the plugin is mounted (`/dashboard/assets`). */
export function hashedAssets<Name extends string>(
  directory: URL,
  urlPath: string,
  names: readonly Name[],
): HashedAssets<Name> {
  // A Map, not an object: a requested name such as `__proto__` must find nothing.
  const files = new Map<string, Name>();
  const urls = new Map<Name, string>();
  for (const name of names) {
    const hash = createHash('sha256')
      .update(readFileSync(new URL(name, directory)))
      .digest('hex')
      .slice(0, HASH_LENGTH);
    const dot = name.lastIndexOf('.');
    const hashed = `${name.slice(0, dot)}.${hash}${name.slice(dot)}`;
    files.set(hashed, name);
    urls.set(name, `${urlPath}/${hashed}`);
  }

  return {
    url: (name) => urls.get(name) ?? '',
    plugin: async (scope) => {
      if (scope.prefix !== urlPath) throw new Error(`assets of ${urlPath} registered at ${scope.prefix}`);
      await scope.register(fastifyStatic, { root: fileURLToPath(directory), serve: false });
      scope.get(
        '/:file',
        { schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 200 }) }) } },
        async (request, reply) => {
          const file = files.get(request.params.file);
          if (!file) return reply.callNotFound();
          return reply.sendFile(file, { maxAge: ONE_YEAR_MS, immutable: true });
        },
      );
    },
  };
}
