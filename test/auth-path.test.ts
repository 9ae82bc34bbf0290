import { readFileSync } from 'node:fs'
import type { InjectOptions } from 'fastify'
import t from 'tap'
import { build, json } from './helper.js'
import { join } from 'node:path'
import { ROOT } from '../src/package-info.js'

// Every operation the exported documents mark as needing a token (security without the anonymous `{}`).
const UUID = '00000000-0000-4000-8000-000000000000'
function authenticatedOperations () {
  const ops: Array<{ method: InjectOptions['method'], url: string, id: string }> = []
  for (const version of ['v1', 'v2']) {
    const doc = JSON.parse(readFileSync(join(ROOT, 'openapi', `${version}.json`), 'utf8'))
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const security: Array<Record<string, unknown>> | undefined = op.security
        // public ([]) and optional-token ([{}, {bearerAuth}]) operations need none
        if (!security?.length || security.some(s => Object.keys(s).length === 0)) continue
        ops.push({ method: method.toUpperCase() as InjectOptions['method'], url: path.replace(/\{[^}]+\}/g, UUID), id: op.operationId })
      }
    }
  }
  return ops
}

t.test('one authentication path: a missing token is 401 on every authenticated route, before any validation', async (t) => {
  const app = await build(t)
  const ops = authenticatedOperations()
  t.ok(ops.length >= 20, `found ${ops.length} authenticated operations`)
  for (const op of ops) {
    // An unknown query parameter and an empty body would both be 422 if validation ran first.
    const res = await app.inject({ method: op.method, url: `${op.url}?x=1`, ...(op.method === 'GET' || op.method === 'DELETE' ? {} : { payload: {} }) })
    t.equal(res.statusCode, 401, `${op.id} ${op.method} ${op.url}?x=1`)
    t.equal(json(res).code, 'NotAuthenticated', op.id)
    t.equal(res.headers['www-authenticate'], 'Bearer', op.id)
  }
})
