import { readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build, transform, type Plugin } from 'esbuild'
import { BUNDLE_OPTIONS } from './bundle.js'

/**
 * npm test's build of the test files (scripts/test.sh): each file bundled with the app and its
 * dependencies, split into shared chunks, as `npm start` runs the server. tap loads every test
 * process through a module hook (@tapjs/processinfo) that on Node 20 crosses to a thread of its
 * own for each module. A few chunks instead of about 1 100 modules: the SQLite run took 232 CPU-s
 * against 350.
 *
 * Usage: node --import tsx scripts/bundle-tests.ts OUTDIR FILE...
 */

/**
 * Each of our modules keeps its own `import.meta` (url, dirname, filename) as if it ran where it is
 * written: a module bundled into a test file would otherwise take the test's, and a script's
 * "am I the program?" check (`import.meta.url` against argv[1]) would run the script's main.
 */
const ownImportMeta: Plugin = {
  name: 'own-import-meta',
  setup (build) {
    build.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
      if (path.includes('/node_modules/')) return undefined
      const { code } = await transform(await readFile(path, 'utf8'), {
        loader: 'ts',
        format: 'esm',
        target: 'node20',
        sourcefile: path,
        sourcemap: 'inline',
        define: {
          'import.meta.url': JSON.stringify(pathToFileURL(path).href),
          'import.meta.dirname': JSON.stringify(dirname(path)),
          'import.meta.filename': JSON.stringify(path)
        }
      })
      return { loader: 'js', contents: code }
    })
  }
}

const [outdir, ...entryPoints] = process.argv.slice(2)
await build({
  ...BUNDLE_OPTIONS,
  entryPoints,
  outdir,
  outbase: '.',
  // tap's own library is bundled too: a test of one assertion took 0.71 CPU-s against 1.49 with
  // tap's modules loaded one by one. The tools the tests run stay packages of their own.
  external: [...BUNDLE_OPTIONS.external, 'tsx', 'tsx/*', 'esbuild', 'typescript'],
  // tap runs tests with --enable-source-maps: stacks name the TypeScript files. Without the sources
  // in it (tap reads them from disk for a failure's excerpt), each test process parses a map a third
  // the size: 0.15 of the 1.9 CPU-s a small test file costs.
  sourcemap: 'linked',
  sourcesContent: false,
  plugins: [ownImportMeta]
})
