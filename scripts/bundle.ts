import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'

/**
 * `npm start` runs one file, dist/server.js: tsc's output for src/server.ts bundled with its
 * dependencies by esbuild. Node loaded about 1 100 modules one by one at every start, half of a
 * cold start (bench/README.md, "start-up from one bundled file"); one file is read and compiled once.
 *
 * What stays a package of its own, loaded from node_modules as before:
 */
export const EXTERNAL = [
  // native addons, and the drivers dialect.ts requires only for their database
  'better-sqlite3', 'pg', 'pg-native',
  // packages that find files beside their own code (`__dirname`): pino's transport workers,
  // the docs UI's static files, @fastify/swagger's package.json
  'pino', 'pino-pretty', '@fastify/swagger', '@fastify/swagger-ui',
  // imported only when used (SMTP, Redis, uploads' type sniffing, tracing): no start-up cost
  'nodemailer', 'ioredis', 'file-type', '@fastify/otel', '@opentelemetry/*'
]

/** Options shared by `npm run build` and test/bundle.test.ts. */
export function bundleOptions (outdir: string, entry = 'dist/src/server.js') {
  return {
    entryPoints: { server: entry },
    outdir,
    bundle: true,
    // what is imported only when used (tracing) stays a chunk of its own, loaded then
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    // CommonJS dependencies call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);" },
    logLevel: 'warning'
  } as const
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Like `tsc -b`, writes only what changed (each file renamed into place whole), so a server
  // starting meanwhile never reads a half-written bundle; the last bundle's other files go.
  const { outputFiles } = await build({ ...bundleOptions('dist'), write: false })
  const current = new Set(outputFiles.map(f => basename(f.path)))
  for (const file of readdirSync('dist')) if (file.endsWith('.js') && !current.has(file)) rmSync(join('dist', file))
  for (const { path, contents } of outputFiles) {
    if (existsSync(path) && readFileSync(path).equals(contents)) continue
    writeFileSync(`${path}.tmp`, contents)
    renameSync(`${path}.tmp`, path)
  }
}
