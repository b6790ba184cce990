/**
 * `npm run lint` runs this: no module may depend on itself through others (an import cycle
 * makes load order matter and two modules that can only change together). Type-only
 * imports count too (`tsPreCompilationDeps`): a cycle through types still ties the modules.
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
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
