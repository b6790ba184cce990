/**
 * `npm run lint` runs this: no module may depend on itself through others (an import cycle
 * makes load order matter and two modules that can only change together). Type-only
 * imports count too (`tsPreCompilationDeps`): a cycle through types still ties the modules.
 * And only src/http/validation.ts may construct Ajv: one validator set-up for the app.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles are not allowed; move the shared piece into its own module.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'one-validator-setup',
      severity: 'error',
      comment:
        'Validators are compiled by the one Ajv set-up in src/http/validation.ts (jsonValidator, the compilers); ' +
        'elsewhere import only its types.',
      from: { path: '^src/', pathNot: '^src/http/validation\\.ts$' },
      to: { path: 'node_modules/ajv(-formats)?/', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^dist/' },
  },
};
