// Bundles the extension (extension/src/extension.ts → out/extension.js) and the unit tests
// (extension/test/unit/*.test.ts → out/unit/*.test.js, run by node's test runner).
// Usage: node esbuild.mjs [--production] [--watch] [--unit-tests]
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const args = new Set(process.argv.slice(2));
const production = args.has('--production');

/** @type {import('esbuild').BuildOptions} */
const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: production ? false : 'linked',
  logLevel: 'warning',
};

if (args.has('--unit-tests')) {
  const dir = 'extension/test/unit';
  const entryPoints = readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(dir, f));
  await esbuild.build({
    ...common,
    entryPoints,
    outdir: 'out/unit',
    sourcemap: 'inline',
    // The unit-tested modules must not import vscode; a stray import fails the build here.
    external: [],
  });
} else {
  const options = {
    ...common,
    entryPoints: ['extension/src/extension.ts'],
    outfile: 'out/extension.js',
    external: ['vscode'],
    // First statement of the bundle: when VS Code started loading our code (activation timing).
    banner: { js: 'globalThis.__dynamoLensLoadStart = Date.now();' },
    minify: production,
    keepNames: true,
    metafile: true,
  };
  if (args.has('--watch')) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
    console.log('[esbuild] watching');
  } else {
    const result = await esbuild.build(options);
    const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
    console.log(`[esbuild] out/extension.js ${(bytes / 1024).toFixed(0)} KiB`);
  }
}
