import { createHash, randomBytes } from 'node:crypto'
import {
  accessSync, constants, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync
} from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import type SQLite from 'better-sqlite3'
import { ConfigError, loadConfig, type Config } from '../plugins/config.js'

/**
 * `npm run cli -- backup <dir>` and `restore <dir>` on SQLite (PostgreSQL: pg_dump and pg_restore,
 * docs/operations.md). A backup is a directory: roja.sqlite, an online copy taken with SQLite's backup
 * API while writes go on; media/, the bytes of every medium its rows name; and manifest.json,
 * written last, with each file's size and sha256. Without a manifest, or with a file that does not
 * match it, restore refuses the directory: an interrupted backup leaves nothing it accepts.
 */

export const MANIFEST = 'manifest.json'
const FORMAT = 'roja-backup/1'
const DATABASE_FILE = 'roja.sqlite'
// the media driver's keys (plugins/media-storage.ts); anything else in the folder is a temporary
const KEY = /^[a-z0-9][a-z0-9-]{0,127}$/

export interface Manifest {
  format: string
  created_at: string
  /** the migrations the copy holds: restore with a release that knows them */
  migrations: string[]
  files: Array<{ path: string, size: number, sha256: string }>
}

export class BackupError extends Error {}

const require = createRequire(import.meta.url)
const openSqlite = (file: string, readonly = false) => {
  const Driver = require('better-sqlite3') as typeof SQLite
  const db = new Driver(file, { readonly, fileMustExist: true })
  db.pragma('busy_timeout = 5000')
  return db
}

function sqliteFile (config: Config, verb: string): string {
  if (!config.databaseUrl.startsWith('sqlite:') || config.databaseUrl === 'sqlite::memory:') {
    throw new BackupError(`${verb} works on a SQLite file; on PostgreSQL use pg_dump and pg_restore with the media folder ` +
      '(docs/operations.md, Backups)')
  }
  return resolve(config.databaseUrl.slice('sqlite:'.length))
}

function sha256Of (file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex')
}

/** Takes a backup of the configured SQLite database and its media into `target`, a directory that must not exist yet. */
export async function backup (config: Config, target: string): Promise<Manifest> {
  const source = sqliteFile(config, 'backup')
  const dir = resolve(target)
  // Fails before any work when the path cannot be written: an existing path, or a parent that is not a writable folder.
  if (existsSync(dir)) throw new BackupError(`cannot write the backup to ${dir}: it exists already (give a new path)`)
  try {
    accessSync(dirname(dir), constants.W_OK)
    mkdirSync(dir)
  } catch (err) {
    throw new BackupError(`cannot write the backup to ${dir}: ${(err as Error).message}`)
  }
  if (!existsSync(source)) throw new BackupError(`no database at ${source}`)
  const media = join(config.dataDir, 'media')
  const copiedMedia = join(dir, 'media')
  mkdirSync(copiedMedia)

  // Media first: a medium deleted once the copy below is taken keeps its bytes here.
  const keys = () => existsSync(media) ? readdirSync(media).filter(name => KEY.test(name)) : []
  for (const key of keys()) copyIfPresent(join(media, key), join(copiedMedia, key))

  // One step copies every page under one read: a consistent snapshot, as writers go on (WAL).
  const live = openSqlite(source)
  try {
    await live.backup(join(dir, DATABASE_FILE), { progress: () => 1_000_000_000 })
  } finally {
    live.close()
  }

  const copy = openSqlite(join(dir, DATABASE_FILE))
  let named: Array<{ storage_key: string, sha256: string }>
  let migrations: string[]
  try {
    copy.pragma('journal_mode = DELETE') // one file, as it is restored
    named = copy.prepare('select storage_key, sha256 from media').all() as typeof named
    migrations = (copy.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>).map(r => r.name)
  } finally {
    copy.close()
  }
  // Media written after the first pass and named by the copy; then only what the copy names stays.
  const wanted = new Set(named.map(m => m.storage_key))
  for (const key of wanted) if (!existsSync(join(copiedMedia, key))) copyIfPresent(join(media, key), join(copiedMedia, key))
  for (const key of readdirSync(copiedMedia)) if (!wanted.has(key)) rmSync(join(copiedMedia, key))
  const whole = (m: { storage_key: string, sha256: string }) => existsSync(join(copiedMedia, m.storage_key)) &&
    sha256Of(join(copiedMedia, m.storage_key)) === m.sha256
  const missing = named.filter(m => !whole(m))
  if (missing.length > 0) {
    const some = missing.slice(0, 3).map(m => m.storage_key).join(', ')
    throw new BackupError(`the media of ${missing.length} rows could not be copied whole (${some}): ` +
      'no manifest written, take the backup again')
  }

  const files = [DATABASE_FILE, ...[...wanted].sort().map(key => `media/${key}`)]
    .map(path => ({ path, size: statSync(join(dir, path)).size, sha256: sha256Of(join(dir, path)) }))
  const manifest: Manifest = { format: FORMAT, created_at: new Date().toISOString(), migrations, files }
  writeFileSync(join(dir, `${MANIFEST}.tmp`), `${JSON.stringify(manifest, null, 2)}\n`)
  renameSync(join(dir, `${MANIFEST}.tmp`), join(dir, MANIFEST))
  return manifest
}

function copyIfPresent (from: string, to: string): void {
  try {
    copyFileSync(from, to)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err // deleted meanwhile: the rows say whether it is needed
  }
}

/** The backup's manifest, once every file it lists is there with its size and checksum; throws otherwise. */
export function verify (target: string): Manifest {
  const dir = resolve(target)
  let manifest: Manifest
  try {
    manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Manifest
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? `no ${MANIFEST}` : (err as Error).message
    throw new BackupError(`${dir} is not a complete backup: ${why}`)
  }
  if (manifest.format !== FORMAT) throw new BackupError(`${dir}: unknown backup format ${JSON.stringify(manifest.format)}`)
  if (!manifest.files.some(f => f.path === DATABASE_FILE)) throw new BackupError(`${dir}: the manifest lists no ${DATABASE_FILE}`)
  for (const file of manifest.files) {
    const path = join(dir, file.path)
    if (!existsSync(path)) throw new BackupError(`${dir}: ${file.path} is missing`)
    if (statSync(path).size !== file.size || sha256Of(path) !== file.sha256) {
      throw new BackupError(`${dir}: ${file.path} does not match its checksum`)
    }
  }
  return manifest
}

/** Restores a verified backup into the configured DATA_DIR, which must be empty unless `force`. */
export async function restore (config: Config, target: string, { force = false } = {}): Promise<Manifest> {
  const file = sqliteFile(config, 'restore')
  const manifest = verify(target)
  const present = existsSync(config.dataDir) ? readdirSync(config.dataDir) : []
  if (present.length > 0 && !force) {
    throw new BackupError(`DATA_DIR ${config.dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ' …' : ''}): ` +
      'restore into an empty one, or give --force to replace its database and media')
  }
  // Everything lands beside its place first and is renamed in at the end.
  const media = join(config.dataDir, 'media')
  const staging = join(config.dataDir, `.restore-${randomBytes(4).toString('hex')}`)
  mkdirSync(join(staging, 'media'), { recursive: true })
  mkdirSync(dirname(file), { recursive: true })
  for (const f of manifest.files) copyFileSync(join(resolve(target), f.path), join(staging, f.path))
  for (const suffix of ['-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
  renameSync(join(staging, DATABASE_FILE), file)
  rmSync(media, { recursive: true, force: true })
  renameSync(join(staging, 'media'), media)
  rmSync(staging, { recursive: true, force: true })
  return manifest
}

const USAGE = {
  backup: 'usage: npm run cli -- backup <new directory>',
  restore: 'usage: npm run cli -- restore <backup directory> [--force]'
}

/** The CLI's `backup` and `restore` (src/cli.ts hands them their arguments): the exit code. */
export async function backupCommand (verb: 'backup' | 'restore', args: string[]): Promise<number> {
  const force = args.includes('--force')
  const paths = args.filter(a => a !== '--force')
  if (paths.length !== 1 || paths[0].trim() === '' || (verb === 'backup' && force)) {
    console.error(USAGE[verb])
    return 2
  }
  let config
  try {
    config = loadConfig(process.env, { dotenv: true })
  } catch (err) {
    if (err instanceof ConfigError) { console.error(err.message); return 1 }
    throw err
  }
  try {
    const started = Date.now()
    const manifest = verb === 'backup' ? await backup(config, paths[0]) : await restore(config, paths[0], { force })
    const bytes = manifest.files.reduce((sum, f) => sum + f.size, 0)
    console.log(`${verb === 'backup' ? 'backed up' : 'restored'} ${manifest.files.length - 1} media files and the database ` +
      `(${bytes} bytes, ${manifest.migrations.length} migrations) in ${Date.now() - started} ms`)
    return 0
  } catch (err) {
    console.error(`error: ${(err as Error).message}`)
    return 1
  }
}
