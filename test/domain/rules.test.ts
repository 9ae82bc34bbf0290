import { Ajv } from 'ajv'
import t from 'tap'
import { StudentListQuery } from '../../schemas/classes.js'
import { ListQuery, LIMIT_MAX } from '../../schemas/common.js'
import { isLenientDateTime, parseDateTimeInput } from '../../src/db/date-time-format.js'
import { pageOrCount, parseSort } from '../../src/domain/list.js'
import { isVisible, slugify } from '../../src/domain/posts.js'

// The domain's rules on their own: no app, no HTTP, no database.

t.test('visibility of drafts and scheduled posts', async (t) => {
  const past = new Date(Date.now() - 60_000).toISOString()
  const future = new Date(Date.now() + 60_000).toISOString()
  t.ok(isVisible({ published_at: past, creator_id: 'c' }, undefined), 'a published post: anyone')
  t.notOk(isVisible({ published_at: null, creator_id: 'c' }, undefined), 'a draft: not anyone')
  t.notOk(isVisible({ published_at: null, creator_id: 'c' }, 'x'), 'a draft: not another user')
  t.ok(isVisible({ published_at: null, creator_id: 'c' }, 'c'), 'a draft: its creator')
  t.notOk(isVisible({ published_at: future, creator_id: 'c' }, 'x'), 'a scheduled post: not before its time')
  t.ok(isVisible({ published_at: future, creator_id: 'c' }, 'c'), 'a scheduled post: its creator')
  t.ok(isVisible({ published_at: new Date(Date.now() - 1), creator_id: 'c' }, undefined), 'a Date (PostgreSQL) just past')
})

t.test('paging: limit 1..100, offset ≥ 0, as the list schemas say', async (t) => {
  const validate = new Ajv({ useDefaults: true, strict: false }).compile(ListQuery(['created_at'], {}))
  const ok = (q: Record<string, unknown>) => validate({ ...q })
  t.ok(ok({ limit: 1 }), 'limit 1')
  t.ok(ok({ limit: LIMIT_MAX }), 'limit 100')
  t.notOk(ok({ limit: 0 }), 'limit 0')
  t.notOk(ok({ limit: LIMIT_MAX + 1 }), 'limit 101')
  t.ok(ok({ offset: 0 }), 'offset 0')
  t.notOk(ok({ offset: -1 }), 'offset -1')
  t.notOk(ok({ offset: Number.MAX_SAFE_INTEGER + 2 }), 'offset past 2^53 − 1')
  const defaults: Record<string, unknown> = {}
  validate(defaults)
  t.same(defaults, { limit: 10, offset: 0 }, 'defaults')
})

t.test('paging forms: limit/offset or page/count, never both', async (t) => {
  t.same(pageOrCount({}), { limit: 10, offset: 0 })
  t.same(pageOrCount({ limit: 5, offset: 15 }), { limit: 5, offset: 15 })
  t.same(pageOrCount({ page: 3, count: 5 }), { limit: 5, offset: 10, style: 'page' })
  t.same(pageOrCount({ page: 1 }), { limit: 10, offset: 0, style: 'page' })
  const validate = new Ajv({ strict: false }).compile(StudentListQuery)
  t.ok(validate({ page: 2, count: 5 }), 'the page form alone')
  t.ok(validate({ limit: 5, offset: 0 }), 'the offset form alone')
  t.notOk(validate({ limit: 5, page: 2 }), 'limit with page: refused by the schema')
  t.notOk(validate({ offset: 0, count: 2 }), 'offset with count: refused by the schema')
})

t.test('sorting: named fields only, a tiebreak keeps pages stable', async (t) => {
  const columns = { title: 'post.title', created_at: 'post.created_at' }
  const fallback = [{ column: 'post.created_at', direction: 'desc' as const }]
  t.same(parseSort('-title', columns, fallback, 'post.id'), [{ column: 'post.title', direction: 'desc' }, { column: 'post.id', direction: 'desc' }])
  t.same(parseSort(undefined, columns, fallback, 'post.id'), [...fallback, { column: 'post.id', direction: 'desc' }])
  t.throws(() => parseSort('password', columns, fallback), /unsortable/)
})

t.test('date-time input: any RFC 3339 form, stored as UTC without a fraction', async (t) => {
  t.equal(parseDateTimeInput('2026-01-02T03:04:05Z'), '2026-01-02T03:04:05.000Z')
  t.equal(parseDateTimeInput('2026-01-02T03:04:05+02:00'), '2026-01-02T01:04:05.000Z')
  t.equal(parseDateTimeInput('2026-01-02T03:04:05-0130'), '2026-01-02T04:34:05.000Z')
  t.equal(parseDateTimeInput('2026-01-02T03:04:05.999'), '2026-01-02T03:04:05.000Z', 'no zone is UTC, the fraction is dropped')
  t.ok(isLenientDateTime('2024-02-29T00:00:00Z'), 'a leap day')
  t.notOk(isLenientDateTime('2026-02-29T00:00:00Z'), 'not a leap year')
  t.notOk(isLenientDateTime('2026-02-30T00:00:00Z'), 'no rolling over into March')
  t.notOk(isLenientDateTime('2026-01-02T24:00:00Z'), 'hour 24')
  t.ok(isLenientDateTime('2026-01-02T23:59:59+23:59'), 'the largest offset')
  t.notOk(isLenientDateTime('2026-01-02T23:59:59+24:00'), 'an offset past 23:59')
  t.throws(() => parseDateTimeInput('yesterday'))
})

t.test('slugs: lower-case ASCII words joined by -', async (t) => {
  t.equal(slugify('Über Café!'), 'uber-cafe')
  t.equal(slugify('  --  '), 'post', 'nothing left: a default')
  t.equal(slugify('a'.repeat(150)).length, 100, 'at most 100 characters')
})
