import { sql } from '../db/kysely.js'
import { cachedStatementPerShape } from '../db/statement-cache.js'
import type { Executor } from '../db/dialect.js'

const DAY_MS = 86_400_000

/**
 * The exact number of published posts (published_at has come), of one type or all, without
 * counting the posts: the slots of post_counter (kept by triggers, see its migration) sum to every
 * post with a published_at, less the scheduled ones (published_at still ahead). Those due by the
 * day after tomorrow (UTC) are counted in post_published_at_idx, later ones read from
 * post_schedule's days: its triggers count a post there when it is written on an earlier day than
 * its own, which holds for every post of those days while the database's clock is less than a day
 * ahead of this one. One statement, so every part reads the same snapshot.
 */
export async function countPublishedPosts (db: Executor, now: string, type?: string): Promise<number> {
  const horizon = new Date(Math.floor(Date.parse(now) / DAY_MS) * DAY_MS + 2 * DAY_MS).toISOString()
  const [row] = await publishedTotal(db, undefined, { now, horizon, horizonDay: horizon.slice(0, 10), type })
  return Number(row?.total ?? 0)
}

const publishedTotal = cachedStatementPerShape(
  (_db, _: undefined, { now, horizon, horizonDay, type }: { now: string; horizon: string; horizonDay: string; type?: string }) => {
    const ofType = type === undefined ? sql`` : sql`and type = ${type}`
    return sql<{ total: number | string | null }>`select
      coalesce((select sum(published) from post_counter where 1 = 1 ${ofType}), 0)
      - (select count(*) from post where published_at > ${now} and published_at < ${horizon} ${ofType})
      - coalesce((select sum(scheduled) from post_schedule where day >= ${horizonDay} ${ofType}), 0) as total`
  }
)
