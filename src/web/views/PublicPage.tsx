/**
 * The shell of the public pages people reach without signing in: the partner application
 * form and the page of a tracking link that is not active.
 */
import type { PropsWithChildren } from '@kitajs/html';
import { dashboardAssets } from '../../modules/dashboard/assets.js';
import { hashedAssets } from '../assets.js';

export const publicAssets = hashedAssets(new URL('../assets/', import.meta.url), '/assets', ['public.css']);

export function PublicPage({ title, children }: PropsWithChildren<{ title: string }>) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width,initial-scale=1" />
        <title safe>{title}</title>
        <link rel="stylesheet" href={publicAssets.url('public.css')} />
        {/* Without one the browser asks for /favicon.ico, a 404 in its console. */}
        <link rel="icon" href={dashboardAssets.url('icon.svg')} type="image/svg+xml" />
      </head>
      <body>
        <main>{children}</main>
      </body>
    </html>
  );
}
