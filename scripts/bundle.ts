import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build, type BuildOptions } from 'esbuild'
import { ROOT } from '../src/package-info.js'

/**
 * `npm start` runs one file, dist/server.js: src/server.ts bundled with its dependencies by esbuild,
 * so a start reads and compiles one file instead of about 1 100 modules. esbuild strips the types
 * in about a second; `npm run typecheck` (and so npm test and CI) checks them.
 * Why: docs/decisions/0001-bundled-server.md
 *
 * What stays a package of its own, loaded from node_modules as before:
 */
const EXTERNAL = [
  // native addons, and the drivers dialect.ts requires only for their database
  'better-sqlite3', 'pg', 'pg-native',
  // packages that find files beside their own code (`__dirname`): pino's transport workers,
  // the docs UI's static files, @fastify/swagger's package.json
  'pino', 'pino-pretty', '@fastify/swagger', '@fastify/swagger-ui',
  // imported only when used (SMTP, Redis, uploads' type sniffing, tracing): no start-up cost
  'nodemailer', 'ioredis', 'file-type', '@fastify/otel', '@opentelemetry/*'
]

/** How the server is bundled, and the test files with it (scripts/bundle-tests.ts). */
export const BUNDLE_OPTIONS = {
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
} satisfies BuildOptions

/**
 * Builds the bundle into `outdir` (`npm run build` and test/bundle.test.ts). Writes only what
 * changed (each file renamed into place whole), so a server starting meanwhile never reads a
 * half-written bundle; the last bundle's other files go.
 */
export async function writeBundle (outdir: string): Promise<void> {
  const { outputFiles } = await build({ ...BUNDLE_OPTIONS, entryPoints: { server: join(ROOT, 'src', 'server.ts') }, outdir, write: false })
  mkdirSync(outdir, { recursive: true })
  const current = new Set(outputFiles.map(f => basename(f.path)))
  for (const file of readdirSync(outdir)) if (file.endsWith('.js') && !current.has(file)) rmSync(join(outdir, file))
  for (const { path, text } of outputFiles) {
    const contents = asciiOnly(text)
    if (existsSync(path) && readFileSync(path, 'utf8') === contents) continue
    writeFileSync(`${path}.tmp`, contents)
    renameSync(`${path}.tmp`, path)
  }
}

/**
 * esbuild writes strings, regular expressions and names in ASCII (`charset: 'ascii'`, its default)
 * but copies comments as they are, and one character past U+00FF anywhere in a file makes V8 keep
 * the whole source as two bytes a character (docs/decisions/0001-bundled-server.md). What is left
 * is comments, where an escape reads as well (and in a string it would mean the same character).
 */
export function asciiOnly (code: string): string {
  return code.replace(/[^\x00-\x7f]/gu, c => `\\u{${c.codePointAt(0)!.toString(16)}}`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await writeBundle('dist')
