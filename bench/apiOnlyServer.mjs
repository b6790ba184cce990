// The API alone on SQLite, as the benchmarks measure it: `affitrack serve --role api` is
// refused on SQLite (one server there runs API and worker together), but a benchmark of a hot
// path compares the API against a bare node:http server and must not share its cores with the
// worker's background jobs. Same start-up as the CLI's `serve`, minus the role check.
import { loadConfig } from '../dist/config.js';
import { serve } from '../dist/server.js';

await serve(loadConfig(), 'api');
