import { randomBytes, randomUUID } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import cliProgress from 'cli-progress'
import type { Insertable } from 'kysely'
import { onConfiguredDatabase } from '../src/cli.js'
import type { Db } from '../src/db/dialect.js'
import type { Database } from '../src/db/schema.js'
import { hashPassword } from '../src/domain/passwords.js'

/**
 * Realistic data, quickly (`npm run seed -- --posts N [--users M]`): users with profiles, a
 * fifth of them creators, and posts spread over two years (mostly published, some drafts, a few
 * scheduled), with tags in post_tag and sort_at kept as the domain keeps it. Rows go in as
 * multi-row INSERTs, many per transaction. post_counter and post_schedule follow through their triggers.
 */
export interface SeedOptions {
  posts: number
  /** scrypt cost of the seeded users' password hash (npm run seed: PASSWORD_HASH_COST) */
  hashCost: number
  /** default: one user per 50 posts, at least 10 */
  users?: number
  /** no progress output at all (tests) */
  quiet?: boolean
  /** where progress goes: a bar on a terminal, else a line every `progressEveryMs` (default stderr, 5 s) */
  progress?: NodeJS.WritableStream & { isTTY?: boolean }
  progressEveryMs?: number
}

export interface SeedResult {
  users: number
  creators: number
  posts: number
  tags: number
  /** every seeded user's password */
  password: string
  /** a few seeded creators' usernames, for tools that need to sign in (the benchmark) */
  creatorUsernames: string[]
  /** a few seeded users who are not creators */
  readerUsernames: string[]
}

/** The password of every seeded user (seeded data is for development; it is not a secret). */
export const SEED_PASSWORD = 'roja-seed-password'

// 1000 posts × 12 columns = 12 000 parameters: under SQLite's 32 766 and PostgreSQL's 65 535.
const POST_BATCH = 1000
const USER_BATCH = 1000 // profile: 9 columns
const BATCHES_PER_TRANSACTION = 20
const DAY = 86_400_000

const WORDS = (
  'river stone light garden winter signal paper orbit copper velvet harbour lantern meadow thunder ' +
  'silver canyon ember willow pixel atlas cedar quartz falcon delta maple nova prism saffron tide violet ' +
  'guide notes lessons primer workshop recipes journal sketches field study basics deep dive'
).split(' ')
const TAGS = (
  'rust typescript cooking music guitar photography travel design fitness yoga writing poetry ' +
  'history science math chess gardening finance startups ai databases linux security art film baking ' +
  'running cycling knitting woodworking'
).split(' ')
const FIRST = 'Ada Grace Alan Linus Margaret Ken Barbara Dennis Radia Frances Edsger Donald Hedy Katherine John'.split(' ')
const LAST = 'Lovelace Hopper Turing Torvalds Hamilton Thompson Liskov Ritchie Perlman Allen Dijkstra Knuth Lamarr Johnson'.split(' ')

/** A small fast PRNG, so a seed run is quick; the data need look varied, not be secret. */
function rng (seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export async function seed (db: Db, opts: SeedOptions): Promise<SeedResult> {
  const random = rng(randomBytes(4).readUInt32BE())
  const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)]
  const run = randomBytes(3).toString('hex') // usernames of one run never clash with another's
  const userCount = opts.users ?? Math.max(10, Math.ceil(opts.posts / 50))
  const now = Date.now()
  const passwordHash = await hashPassword(SEED_PASSWORD, opts.hashCost)

  const bar = opts.quiet ? undefined : progress(opts.progress ?? process.stderr, opts.progressEveryMs ?? 5000)

  // Users and their profiles; every fifth is a creator (and at least one).
  const creatorIds: string[] = []
  const creatorUsernames: string[] = []
  const readerUsernames: string[] = []
  bar?.start(userCount, 0, { task: 'users' })
  for (let start = 0; start < userCount; start += USER_BATCH) {
    const users: Array<Insertable<Database['user']>> = []
    const profiles: Array<Insertable<Database['profile']>> = []
    for (let i = start; i < Math.min(userCount, start + USER_BATCH); i++) {
      const id = randomUUID()
      const username = `seed-${run}-${i}`
      const creator = i % 5 === 0
      const joined = new Date(now - (730 + random() * 365) * DAY).toISOString()
      if (creator) {
        creatorIds.push(id)
        if (creatorUsernames.length < 10) creatorUsernames.push(username)
      } else if (readerUsernames.length < 10) readerUsernames.push(username)
      users.push({
        id,
        username,
        email: `${username}@example.com`,
        password_hash: passwordHash,
        is_active: true,
        is_creator: creator,
        created_at: joined,
        updated_at: joined
      })
      profiles.push({
        id,
        first_name: pick(FIRST),
        last_name: random() < 0.9 ? pick(LAST) : null,
        age: random() < 0.6 ? 18 + Math.floor(random() * 60) : null,
        favorite_band: null,
        website: null,
        avatar_url: null,
        created_at: joined,
        updated_at: joined
      })
    }
    await db.transaction().execute(async trx => {
      await trx.insertInto('user').values(users).execute()
      await trx.insertInto('profile').values(profiles).execute()
    })
    bar?.update(Math.min(userCount, start + USER_BATCH))
  }
  bar?.stop()

  let tagRows = 0
  bar?.start(opts.posts, 0, { task: 'posts' })
  for (let start = 0; start < opts.posts; start += POST_BATCH * BATCHES_PER_TRANSACTION) {
    await db.transaction().execute(async trx => {
      const end = Math.min(opts.posts, start + POST_BATCH * BATCHES_PER_TRANSACTION)
      for (let from = start; from < end; from += POST_BATCH) {
        const posts: Array<Insertable<Database['post']>> = []
        const tags: Array<Insertable<Database['post_tag']>> = []
        for (let i = from; i < Math.min(end, from + POST_BATCH); i++) {
          const id = randomUUID()
          const created = now - random() * 730 * DAY
          const roll = random()
          // 93 % published (soon after writing), 6.5 % drafts, 0.5 % scheduled within the next month
          const published = roll < 0.93 ? Math.min(now, created + random() * 3 * DAY) : roll < 0.995 ? null : now + random() * 30 * DAY
          const updated = random() < 0.2 ? Math.min(now, created + random() * 60 * DAY) : created
          const postTags = [...new Set(Array.from({ length: Math.floor(random() * 4) }, () => pick(TAGS)))]
          const title = `${cap(pick(WORDS))} ${pick(WORDS)} ${pick(WORDS)} ${i}`
          const iso = (ms: number) => new Date(ms).toISOString()
          posts.push({
            id,
            creator_id: pick(creatorIds),
            type: random() < 0.7 ? 'ARTICLE' : 'COURSE',
            slug: `${title.toLowerCase().replace(/ /g, '-')}-${run}`,
            title,
            body: Array.from({ length: 8 + Math.floor(random() * 30) }, () => pick(WORDS)).join(' ') + '.',
            tags: JSON.stringify(postTags),
            media_url: null,
            published_at: published === null ? null : iso(published),
            created_at: iso(created),
            updated_at: iso(updated),
            sort_at: iso(Math.max(created, updated, published ?? 0))
          })
          for (const tag of postTags) tags.push({ post_id: id, tag })
        }
        await trx.insertInto('post').values(posts).execute()
        if (tags.length > 0) await trx.insertInto('post_tag').values(tags).execute()
        tagRows += tags.length
        bar?.update(Math.min(end, from + POST_BATCH))
      }
    })
  }
  bar?.stop()
  return {
    users: userCount,
    creators: creatorIds.length,
    posts: opts.posts,
    tags: tagRows,
    password: SEED_PASSWORD,
    creatorUsernames,
    readerUsernames
  }
}

interface Progress {
  start(total: number, value: number, payload: { task: string }): void
  update(value: number): void
  stop(): void
}

/**
 * A bar on a terminal; elsewhere (CI, a log file, a pipe) a bar would print nothing readable, so
 * a line at the start, every `everyMs` and at the end of each task.
 */
function progress (out: NodeJS.WritableStream & { isTTY?: boolean }, everyMs: number): Progress {
  if (out.isTTY) {
    return new cliProgress.SingleBar(
      { stream: out, format: ' {task} [{bar}] {percentage}% | {value}/{total} | {eta_formatted} left', etaBuffer: 50 },
      cliProgress.Presets.shades_classic
    )
  }
  let task = ''
  let total = 0
  let value = 0
  let last = 0
  const line = () => {
    out.write(`${task}: ${value}/${total} (${total === 0 ? 100 : Math.floor((value * 100) / total)} %)\n`)
    last = Date.now()
  }
  return {
    start (n, v, payload) {
      task = payload.task
      total = n
      value = v
      line()
    },
    update (v) {
      value = v
      if (Date.now() - last >= everyMs && value < total) line()
    },
    stop () {
      line()
    }
  }
}

function cap (word: string): string {
  return word[0].toUpperCase() + word.slice(1)
}

/** `--posts N [--users M]`; undefined when the arguments are not that. */
export function parseSeedArgs (args: string[]): Omit<SeedOptions, 'hashCost'> | undefined {
  const opts: Partial<SeedOptions> = {}
  for (let i = 0; i < args.length; i += 2) {
    const value = Number(args[i + 1])
    if (!Number.isSafeInteger(value) || value < 0) return undefined
    if (args[i] === '--posts') opts.posts = value
    else if (args[i] === '--users' && value > 0) opts.users = value
    else return undefined
  }
  return opts.posts === undefined ? undefined : { posts: opts.posts, users: opts.users }
}

const USAGE = `usage: npm run seed -- --posts <n> [--users <m>]

Adds users (one per 50 posts, at least 10, every fifth a creator) and posts (mostly published, some
drafts, a few scheduled) to the database of DATABASE_URL (default: sqlite under DATA_DIR, ./data),
and prints a few accounts to sign in with. Every seeded user's password is "${SEED_PASSWORD}".`

/** `npm run seed`: exit 0 done (and help), 1 failed, 2 bad usage. */
export async function main (argv: string[]): Promise<number> {
  if (argv.some(a => a === '--help' || a === '-h')) {
    console.log(USAGE)
    return 0
  }
  const opts = parseSeedArgs(argv)
  if (!opts) {
    console.error(USAGE)
    return 2
  }
  return onConfiguredDatabase(async (db, config) => {
    const done = await seed(db, { ...opts, hashCost: config.PASSWORD_HASH_COST })
    return [
      `seeded ${done.users} users (${done.creators} creators) and ${done.posts} posts with ${done.tags} tags`,
      `every seeded user's password: ${done.password}`,
      'accounts to sign in with (POST /v1/auth/token):',
      ...done.creatorUsernames.slice(0, 3).map(u => `  ${u}  creator`),
      ...done.readerUsernames.slice(0, 2).map(u => `  ${u}  not a creator`)
    ].join('\n')
  })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2))
}
