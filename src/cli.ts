import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ConfigError, loadConfig, type Config } from '../plugins/config.js'
import { diskStorage } from '../plugins/media-storage.js'
import { createDb, type Db } from './db/dialect.js'
import { migrateToLatest } from './db/migrate.js'
import { deleteUserByName } from './domain/account.js'
import { backupCommand } from './backup.js'
import { banUser, grantCreator, revokeCreator, revokeTokens, unbanUser, type FlagChange } from './domain/users.js'

/**
 * Operator commands: `npm run cli -- <group> <action> [args]`, on the database of DATABASE_URL
 * (default: DATA_DIR/roja.sqlite), so give it the same settings as the server.
 * Exit codes: 0 done (and help), 1 the command failed (unknown user, bad configuration), 2 bad usage.
 */
export interface Command {
  usage: string
  help: string
  args: string[]
  run: (db: Db, args: string[], config: Config) => Promise<string>
}

const flagCommand = (change: (db: Db, username: string) => Promise<FlagChange>, done: string, already: string) =>
  async (db: Db, [username]: string[]) => {
    const result = await change(db, username)
    return result.changed ? `${result.username} ${done}` : `${result.username} ${already}, nothing changed`
  }

/** The command table: add a line here to add a command. */
export const commands: Record<string, Command> = {
  'creator grant': {
    usage: 'creator grant <username>',
    help: 'lets the user publish posts and open shops and classes',
    args: ['username'],
    run: flagCommand(grantCreator, 'is now a creator', 'is already a creator')
  },
  'creator revoke': {
    usage: 'creator revoke <username>',
    help: 'takes creator rights away (their posts stay)',
    args: ['username'],
    run: flagCommand(revokeCreator, 'is no longer a creator', 'is not a creator')
  },
  'user ban': {
    usage: 'user ban <username>',
    help: 'blocks the user at once, tokens already issued included',
    args: ['username'],
    run: flagCommand(banUser, 'is now banned', 'is already banned')
  },
  'user unban': {
    usage: 'user unban <username>',
    help: 'lets a banned user sign in again',
    args: ['username'],
    run: flagCommand(unbanUser, 'is no longer banned', 'is not banned')
  },
  'user revoke-tokens': {
    usage: 'user revoke-tokens <username>',
    help: 'ends every access token issued so far (the user signs in again)',
    args: ['username'],
    run: async (db, [username]) => `${(await revokeTokens(db, username)).username}: every access token issued so far is revoked`
  },
  'user delete': {
    usage: 'user delete <username>',
    help: 'erases the account and everything that is theirs, media files included, as DELETE /v1/profiles/me does (no undo)',
    args: ['username'],
    run: async (db, [username], config) => {
      const { username: name } = await deleteUserByName(db, diskStorage(join(config.dataDir, 'media')), username)
      return `${name}: the account and everything that was theirs is erased; the username is free`
    }
  }
}

const HELP_FLAGS = new Set(['--help', '-h', 'help'])

/** Help for the commands whose name starts with `prefix` (all of them for an empty prefix). */
function help (prefix: string[]): string {
  const shown = Object.entries(commands).filter(([name]) => prefix.every((word, i) => name.split(' ')[i] === word))
  const width = Math.max(...shown.map(([, c]) => c.usage.length))
  return [
    `usage: npm run cli -- ${prefix.length === 2 ? shown[0][1].usage : '<command>'}`,
    '',
    ...shown.map(([, c]) => `  ${c.usage.padEnd(width)}  ${c.help}`),
    '',
    '  backup <new directory>          an online copy of the SQLite database and its media (src/backup.ts)',
    '  restore <backup> [--force]      into an empty DATA_DIR; PostgreSQL: docs/operations.md, Backups',
    '',
    'Uses the database of DATABASE_URL (default: sqlite under DATA_DIR, ./data): give it the same',
    'settings as the server. Exit codes: 0 done, 1 failed (unknown user, bad configuration), 2 bad usage.'
  ].join('\n')
}

export async function main (argv: string[]): Promise<number> {
  // backup and restore copy files and never open the database through Kysely (src/backup.ts)
  if (argv[0] === 'backup' || argv[0] === 'restore') return backupCommand(argv[0], argv.slice(1))
  const helpAt = argv.findIndex(a => HELP_FLAGS.has(a))
  if (helpAt >= 0) {
    const prefix = argv.slice(0, Math.min(helpAt, 2))
    const known = Object.keys(commands).some(name => prefix.every((word, i) => name.split(' ')[i] === word))
    console[known ? 'log' : 'error'](help(known ? prefix : []))
    return known ? 0 : 2
  }
  const command = commands[argv.slice(0, 2).join(' ')]
  const args = argv.slice(2)
  if (!command || args.length !== command.args.length || args.some(a => a.trim() === '')) {
    if (!command && argv.length > 0) console.error(`unknown command: ${argv.slice(0, 2).join(' ')}\n`)
    console.error(command ? `usage: npm run cli -- ${command.usage}` : help([]))
    return 2
  }
  return onConfiguredDatabase((db, config) => command.run(db, args, config))
}

/**
 * Runs `work` on the migrated database of DATABASE_URL (.env read) and prints what it answers:
 * 0 done, 1 a bad configuration or a failure (unknown user …), printed as one line.
 */
export async function onConfiguredDatabase (work: (db: Db, config: Config) => Promise<string>): Promise<number> {
  let config
  try {
    config = loadConfig(process.env, { dotenv: true })
  } catch (err) {
    if (err instanceof ConfigError) { console.error(err.message); return 1 }
    throw err
  }
  const db = createDb(config.databaseUrl)
  try {
    await migrateToLatest(db)
    console.log(await work(db, config))
    return 0
  } catch (err) {
    console.error(`error: ${(err as Error).message}`)
    return 1
  } finally {
    await db.destroy()
  }
}

// Run only as the entry point, so tests may import the table.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2))
}
