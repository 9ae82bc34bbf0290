import { loadConfig } from '../plugins/config.js'
import { createDb } from '../src/db/dialect.js'
import { migrateToLatest } from '../src/db/migrate.js'

/** `npm run migrate`: applies pending migrations to DATABASE_URL (the server also does at start). */
const config = loadConfig(process.env, { dotenv: true })
const db = createDb(config.databaseUrl)
try {
  const applied = await migrateToLatest(db)
  console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database is up to date')
} finally {
  await db.destroy()
}
