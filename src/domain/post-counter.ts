import { sql } from '../db/kysely.js'
import { cachedStatementPerShape } from '../db/statement-cache.js'
import type { Executor } from '../db/dialect.js'

/**
 * The exact number of published posts (published_at has come), of one type or all, without
 * counting the posts: the slots of post_counter (kept by triggers, see its migration) sum to every
 * post with a published_at, and the scheduled ones (published_at still ahead) are few and found through
 * post_published_at_idx. One statement, so both parts read the same snapshot.
 */
export async function countPublishedPosts (db: Executor, now: string, type?: string): Promise<number> {
  const [row] = await publishedTotal(db, undefined, { now, type })
  return Number(row?.total ?? 0)
}

const publishedTotal = cachedStatementPerShape((_db, _: undefined, { now, type }: { now: string, type?: string }) => {
  const ofType = type === undefined ? sql`` : sql`and type = ${type}`
  return sql<{ total: number | string | null }>`select
      coalesce((select sum(published) from post_counter where 1 = 1 ${ofType}), 0)
      - (select count(*) from post where published_at > ${now} ${ofType}) as total`
})
