/**
 * The layers of src/, top to bottom: a module imports only from layers below its own. Entry points
 * read argv or the action's inputs and call a feature; a feature runs replays and decides; below
 * it, pieces that know nothing of who calls them. A folder in a layer does not import the other
 * folders of its layer either, so no two folders can ever import each other, through any chain.
 *
 * Checked first by `npm test` (scripts/test.mjs) and by test/layers.test.ts, which also shows the
 * rule failing on an upward import. docs/design.md, "Layout", says what each folder is for.
 */

/** Folders (`gate`) and files (`cli.ts`) directly under src/, by layer, top first. */
const LAYERS = [
  // the CLI's executable, then the entry points: the action's steps and the CLI's commands
  ['cli.ts'],
  ['action', 'cli'],
  // features built on the gate: the capacity sweep, pg-retest's .toml runs, sharded runs
  ['capacity', 'pg-retest-config', 'shards'],
  // the gate: base and head replayed in rounds, compared, judged
  ['gate'],
  // the gate's report rendered: markdown, JUnit, JSON
  ['report'],
  // what a comparison means: the verdict's rules and the report's shape
  ['verdict'],
  // the base and head template databases
  ['templates'],
  // query plans and statement statistics
  ['plans'],
  // the replay engine as TypeScript sees it
  ['engine'],
  // PostgreSQL servers, databases and roles
  ['provision'],
  // shared leaves: option parsing, the terminal, the files beside a workload; text forms
  ['options', 'runtime', 'sidecars'],
  ['format'],
  ['types.ts', 'exit-codes.ts', 'tool.ts', 'engine-platforms.mjs', 'engine-manifest.mjs'],
];

/** The path pattern of a folder or file directly under src/. */
function at(name) {
  const escaped = name.replaceAll('.', '\\.');
  return name.includes('.') ? `^src/${escaped}$` : `^src/${escaped}/`;
}

/** One rule per folder: none of the layers above it, nor the other folders of its own. */
function layerRules(layers) {
  return layers.flatMap((layer, rank) =>
    layer.map((name) => {
      const above = layers.slice(0, rank).flat();
      const beside = layer.filter((other) => other !== name);
      const forbidden = [...above, ...beside];
      return {
        name: 'layers',
        severity: 'error',
        comment: `src/${name} imports only from the layers below it (.dependency-cruiser.cjs)`,
        from: { path: at(name) },
        to: { path: forbidden.length > 0 ? forbidden.map(at) : '^$' },
      };
    }),
  );
}

module.exports = {
  forbidden: [
    ...layerRules(LAYERS),
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'no two modules of src/ import each other, through any chain',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'every-module-in-a-layer',
      severity: 'error',
      comment: 'a new folder or file directly under src/ gets a place in LAYERS (.dependency-cruiser.cjs)',
      from: { path: '^src/', pathNot: LAYERS.flat().map(at) },
      to: {},
    },
  ],
  options: {
    // The project's TypeScript (7, native) has no compiler API to parse with; swc reads the sources.
    parser: 'swc',
    // Type-only imports are dependencies too: a type that moves up takes its layer's knowledge with it.
    tsPreCompilationDeps: true,
    doNotFollow: { path: ['node_modules', '^native/', 'package\\.json$'] },
    exclude: { path: '\\.d\\.mts$' },
  },
};
