import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'

/**
 * What PostgreSQL showed while a write target ran: its database's client backends, sampled from
 * pg_stat_activity every SAMPLE_MS. A write that queues behind one hot row shows as backends
 * waiting on a lock (wait_event_type 'Lock': a row's transaction, a tuple, a relation); writers
 * that only share the cores show as active backends with no lock waits.
 */
export interface LockWaits {
  samples: number
  /** mean backends running a statement, waiting or not */
  active: number
  /** mean backends waiting on a lock */
  waiting: number
  /** share of the samples in which at least one backend waited on a lock */
  waitedShare: number
  /** backend-samples by what was waited for (`transactionid`: a row another transaction holds, `tuple`, `extend`: the table's file growing, …) */
  on: Record<string, number>
}

const SAMPLE_MS = 20

const QUERY = `select count(*) filter (where state = 'active')::int as active,
  coalesce(array_agg(wait_event) filter (where wait_event_type = 'Lock'), '{}') as waits
  from pg_stat_activity
  where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`

/** Runs `work` while sampling the lock waits of the database at `url`. */
export async function withLockWaits<T> (url: string, work: () => Promise<T>): Promise<[T, LockWaits]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  let running = true
  const totals = { samples: 0, active: 0, waiting: 0, waited: 0 }
  const on: Record<string, number> = {}
  const sampling = (async () => {
    while (running) {
      const { rows: [row] } = await client.query<{ active: number, waits: string[] }>(QUERY)
      totals.samples++
      totals.active += row.active
      totals.waiting += row.waits.length
      if (row.waits.length > 0) totals.waited++
      for (const event of row.waits) on[event] = (on[event] ?? 0) + 1
      await sleep(SAMPLE_MS)
    }
  })()
  // A failed sample fails the target when awaited below, not the whole process while `work` runs.
  sampling.catch(() => {})
  try {
    const result = await work()
    running = false
    await sampling
    const n = Math.max(totals.samples, 1)
    return [result, { samples: totals.samples, active: totals.active / n, waiting: totals.waiting / n, waitedShare: totals.waited / n, on }]
  } finally {
    running = false
    await sampling.catch(() => {})
    await client.end()
  }
}
