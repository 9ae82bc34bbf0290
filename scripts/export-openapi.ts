import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import Fastify from 'fastify'
import { loadConfig } from '../plugins/config.js'
import { API_VERSIONS } from '../plugins/openapi.js'
import app from '../src/app.js'
import { serverOptions } from '../src/options.js'

/**
 * Writes openapi/<version>.json from the live route schemas (the app as `local` builds it, on an
 * in-memory SQLite), exactly as /openapi/<version>.json serves them. `--check` writes nothing and fails
 * when a committed file is stale.
 */
const check = process.argv.includes('--check')
const root = join(dirname(new URL(import.meta.url).pathname), '..')

const config = loadConfig({
  ENVIRONMENT: 'local',
  LOG_LEVEL: 'silent',
  DATABASE_URL: 'sqlite::memory:',
  // no JWT_SECRET: outside production a random one is made, and nothing is signed here anyway
  DATA_DIR: mkdtempSync(join(tmpdir(), 'roja-openapi-'))
})
const server = Fastify(serverOptions(config))
await server.register(app, { config, outbox: { loop: false } })
await server.ready()
let stale = 0
try {
  for (const version of API_VERSIONS) {
    const file = join(root, 'openapi', `${version}.json`)
    // served in the committed order already (plugins/openapi.ts, stable)
    const text = JSON.stringify(server.openapi(version), null, 2) + '\n'
    if (check) {
      let current = ''
      try { current = readFileSync(file, 'utf8') } catch {}
      if (current !== text) { stale++; console.error(`openapi/${version}.json is stale: run npm run openapi (and npm run client) and commit the result`) }
    } else {
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, text)
      console.log(`wrote openapi/${version}.json (${Object.keys(server.openapi(version).paths).length} paths)`)
    }
  }
} finally {
  await server.close()
}
if (check && stale === 0) console.log('openapi: the committed documents match the routes')
process.exitCode = stale === 0 ? 0 : 1
