import { pathToFileURL } from 'node:url'
import { ConfigError, loadConfig } from '../plugins/config.js'
import { AppError } from '../plugins/problems.js'
import { createDb, type Db } from './db/dialect.js'
import { migrateToLatest } from './db/migrate.js'
import { parseSeedArgs, seed } from './db/seed.js'
import { banUser, grantCreator, revokeCreator, revokeTokens, unbanUser, type FlagChange } from './domain/users.js'

/**
 * Operator commands: `npm run cli -- <group> <action> [args]`. Exit codes: 0 done,
 * 1 the command failed (unknown user, bad configuration), 2 bad usage.
 */
export interface Command {
  usage: string
  args: string[]
  /** for a command with options: checks its arguments instead of counting them */
  accepts?: (args: string[]) => boolean
  run: (db: Db, args: string[]) => Promise<string>
}

const flagCommand = (change: (db: Db, username: string) => Promise<FlagChange>, done: string, already: string) =>
  async (db: Db, [username]: string[]) => {
    const result = await change(db, username)
    return result.changed ? `${result.username} ${done}` : `${result.username} ${already}, nothing changed`
  }

/** The command table: add a line here to add a command. */
export const commands: Record<string, Command> = {
  'creator grant': { usage: 'creator grant <username>', args: ['username'], run: flagCommand(grantCreator, 'is now a creator', 'is already a creator') },
  'creator revoke': { usage: 'creator revoke <username>', args: ['username'], run: flagCommand(revokeCreator, 'is no longer a creator', 'is not a creator') },
  'user ban': { usage: 'user ban <username>', args: ['username'], run: flagCommand(banUser, 'is now banned', 'is already banned') },
  'user unban': { usage: 'user unban <username>', args: ['username'], run: flagCommand(unbanUser, 'is no longer banned', 'is not banned') },
  'user revoke-tokens': {
    usage: 'user revoke-tokens <username>',
    args: ['username'],
    run: async (db, [username]) => `${(await revokeTokens(db, username)).username}: every access token issued so far is revoked`
  },
  seed: {
    usage: 'seed --posts <n> [--users <m>]',
    args: [],
    accepts: args => parseSeedArgs(args) !== undefined,
    run: async (db, args) => {
      const done = await seed(db, parseSeedArgs(args)!)
      return `seeded ${done.users} users (${done.creators} creators) and ${done.posts} posts with ${done.tags} tags; password: ${done.password}`
    }
  }
}

function usage (): string {
  return ['usage: npm run cli -- <command>', ...Object.values(commands).map(c => `  ${c.usage}`)].join('\n')
}

export async function main (argv: string[]): Promise<number> {
  const words = Object.hasOwn(commands, argv[0] ?? '') ? 1 : 2 // one-word commands (seed) take options
  const command = commands[argv.slice(0, words).join(' ')]
  const args = argv.slice(words)
  const accepted = command?.accepts ? command.accepts(args) : args.length === command?.args.length
  if (!command || !accepted || args.some(a => a.trim() === '')) {
    console.error(command ? `usage: npm run cli -- ${command.usage}` : usage())
    return 2
  }
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
    console.log(await command.run(db, args))
    return 0
  } catch (err) {
    if (err instanceof AppError) { console.error(`error: ${err.message}`); return 1 }
    console.error(`error: ${(err as Error).message}`)
    return 1
  } finally {
    await db.destroy()
  }
}

// Run only as the entry point, so other modules (a future `seed`) may import the table.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2))
}
