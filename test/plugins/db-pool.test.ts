import t from 'tap'
import { poolOf } from '../../src/db/dialect.js'
import { build, dialect } from '../helper.js'

t.test('DATABASE_POOL_SIZE sizes the PostgreSQL pool; SQLite has no pool', async (t) => {
  for (const size of ['3', '10']) {
    const app = await build(t, { env: { DATABASE_POOL_SIZE: size } })
    const pool = poolOf(app.db)
    if (dialect === 'postgres') t.equal(pool?.options.max, Number(size), `pool of ${size}`)
    else t.equal(pool, undefined, 'one SQLite connection')
    t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
  }
})
