import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build, dialect, json, recordStatements } from '../../helper.js'
import { createCreator, createUser, type TestUser } from '../../fixtures.js'
import { MISSING, createPost } from '../../post-fixtures.js'

/** The creates of shops, products, classes and students: refusals write nothing, racing writers all land. */

type Table = 'shop' | 'product' | 'class' | 'student'

async function rows (app: FastifyInstance, table: Table): Promise<number> {
  return Number((await app.db.selectFrom(table).select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
}

const post = (app: FastifyInstance, user: TestUser | undefined, url: string, payload: object) =>
  app.inject({ method: 'POST', url, headers: user?.headers ?? {}, payload })

const bodies = {
  shop: (i: number) => ({ name: `Shop ${i}`, description: i % 2 === 0 ? null : 'odd' }),
  product: (i: number) => ({ name: `Product ${i}`, price_cents: 100 + i, currency: 'EUR' }),
  class: (i: number) => ({ name: `Class ${i}`, starts_date: '2027-01-0' + String(1 + (i % 9)) }),
  student: (i: number) => ({ first_name: `Student ${i}`, sex: 'X', email: `s${i}@example.com` })
}

/** A creator with a shop and a class: the parents of products and students. */
async function owner (app: FastifyInstance) {
  const creator = await createCreator(app)
  const shop = json(await post(app, creator, '/v1/shops', bodies.shop(0)))
  const cls = json(await post(app, creator, '/v1/classes', bodies.class(0)))
  return { creator, shop, cls }
}

t.test('refused creates write nothing: not a creator, not the owner, a missing parent, a course not yours', async t => {
  const app = await build(t)
  const { creator, shop, cls } = await owner(app)
  const other = await createCreator(app)
  const reader = await createUser(app)
  const before = { shop: await rows(app, 'shop'), product: await rows(app, 'product'), class: await rows(app, 'class'), student: await rows(app, 'student') }
  const refusals: Array<[string, TestUser, string, object, number, string]> = [
    ['a shop by a non-creator', reader, '/v1/shops', bodies.shop(1), 403, 'UserNotCreator'],
    ['a class by a non-creator', reader, '/v1/classes', bodies.class(1), 403, 'UserNotCreator'],
    ["a product in another's shop", other, `/v1/shops/${shop.id}/products`, bodies.product(1), 403, 'UserNotOwner'],
    ['a product in a missing shop', creator, `/v1/shops/${MISSING}/products`, bodies.product(1), 404, 'ShopNotFound'],
    ["a student in another's class", other, `/v1/classes/${cls.id}/students`, bodies.student(1), 403, 'UserNotOwner'],
    ['a student in a missing class', creator, `/v1/classes/${MISSING}/students`, bodies.student(1), 404, 'ClassNotFound'],
    ['a class for a missing course', creator, '/v1/classes', { ...bodies.class(1), course_id: MISSING }, 422, 'ValidationFailed']
  ]
  const course = await createPost(app, other, { type: 'COURSE' })
  refusals.push(["a class for another's course", creator, '/v1/classes', { ...bodies.class(1), course_id: course.id }, 403, 'UserNotOwner'])
  for (const [what, user, url, payload, status, code] of refusals) {
    const res = await post(app, user, url, payload)
    t.equal(res.statusCode, status, what)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.equal(json(res).code, code, what)
  }
  for (const table of Object.keys(before) as Table[]) t.equal(await rows(app, table), before[table], `no ${table} of a refused create`)
})

t.test('50 concurrent creates of each kind on one parent: every one lands, as its answer says, never a 500', async t => {
  const app = await build(t)
  const { creator, shop, cls } = await owner(app)
  const urls: Record<Table, string> = {
    shop: '/v1/shops',
    product: `/v1/shops/${shop.id}/products`,
    class: '/v1/classes',
    student: `/v1/classes/${cls.id}/students`
  }
  for (const table of Object.keys(urls) as Table[]) {
    const before = await rows(app, table)
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => post(app, creator, urls[table], bodies[table](i))))
    t.same([...new Set(answers.map(a => a.statusCode))], [201], `${table}: 50 × 201`)
    t.equal(await rows(app, table), before + 50, `${table}: 50 rows`)
    const created = json(answers[7])
    t.match(created, bodies[table](7), `${table}: the answer holds what was sent`)
    const read = await app.inject({ method: 'GET', url: answers[7].headers.location as string, headers: creator.headers })
    t.same(json(read), created, `${table}: the created answer is the row as read`)
  }
})

t.test('a shop, product, class or student create costs its reads and, on PostgreSQL, one write statement', async t => {
  const app = await build(t)
  const { creator, shop, cls } = await owner(app)
  const statements = recordStatements(t, app)
  // the account read, then: the shop and class reads of the owner checks, then the one write
  const cases: Array<[string, string, object, number]> = [
    ['shop', '/v1/shops', bodies.shop(1), 2],
    ['product', `/v1/shops/${shop.id}/products`, bodies.product(1), 3],
    ['class', '/v1/classes', bodies.class(1), 2],
    ['student', `/v1/classes/${cls.id}/students`, bodies.student(1), 3]
  ]
  for (const [what, url, payload, expected] of cases) {
    statements.length = 0
    t.equal((await post(app, creator, url, payload)).statusCode, 201)
    t.comment(`statements per ${what} create on ${dialect}: ${statements.length}`)
    t.match(statements[0], /from "user" where "id" = /, `${what}: first the account, by primary key`)
    if (dialect === 'postgres') t.equal(statements.length, expected, `${what}: then its reads and one write with its read-back`)
    else t.ok(statements.length >= expected, `${what}: SQLite, in process, may keep its transaction`)
  }
})

t.test('chapters and lessons: refusals write nothing; 50 concurrent creates take 50 distinct places', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const other = await createCreator(app)
  const course = await createPost(app, creator, { type: 'COURSE' })
  const otherCourse = await createPost(app, other, { type: 'COURSE' })
  const chapter = json(await post(app, creator, `/v1/courses/${course.id}/chapters`, { title: 'One' }))
  const otherChapter = json(await post(app, other, `/v1/courses/${otherCourse.id}/chapters`, { title: 'Theirs' }))
  const count = async (table: 'chapter' | 'lesson') =>
    Number((await app.db.selectFrom(table).select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
  const before = { chapter: await count('chapter'), lesson: await count('lesson') }
  const refusals: Array<[string, TestUser, string, number, string]> = [
    ["a chapter in another's course", other, `/v1/courses/${course.id}/chapters`, 403, 'UserNotOwner'],
    ['a chapter in a missing course', creator, `/v1/courses/${MISSING}/chapters`, 404, 'CourseNotFound'],
    ["a lesson in another's course", other, `/v1/courses/${course.id}/chapters/${chapter.id}/lessons`, 403, 'UserNotOwner'],
    ['a lesson under a chapter of another course', creator, `/v1/courses/${course.id}/chapters/${otherChapter.id}/lessons`, 404, 'ChapterNotFound']
  ]
  for (const [what, user, url, status, code] of refusals) {
    const res = await post(app, user, url, { title: 'Refused', position: 1 })
    t.same([res.statusCode, json(res).code], [status, code], what)
  }
  t.same({ chapter: await count('chapter'), lesson: await count('lesson') }, before, 'no chapter or lesson of a refused create')

  for (const [table, url] of [['chapter', `/v1/courses/${course.id}/chapters`], ['lesson', `/v1/courses/${course.id}/chapters/${chapter.id}/lessons`]] as const) {
    // half at the front, half at the end: every insert shifts or appends under the parent's lock
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => post(app, creator, url, { title: `${table} ${i}`, ...(i % 2 ? { position: 1 } : {}) })))
    t.same([...new Set(answers.map(a => a.statusCode))], [201], `${table}: 50 × 201`)
    const parent = table === 'chapter' ? { column: 'course_id' as const, id: course.id } : { column: 'chapter_id' as const, id: chapter.id }
    const positions = (await app.db.selectFrom(table as 'chapter').select('position').where(parent.column as 'course_id', '=', parent.id).execute())
      .map(r => r.position).sort((a, b) => a - b)
    const expected = table === 'chapter' ? 51 : 50
    t.same(positions, Array.from({ length: expected }, (_, i) => i + 1), `${table}: ${expected} rows at places 1..${expected}`)
    const read = await app.inject({ method: 'GET', url: answers[3].headers.location as string, headers: creator.headers })
    t.same({ ...json(read), position: 0, updated_at: '' }, { ...json(answers[3]), position: 0, updated_at: '' }, `${table}: the created answer is the row as read`)
  }
})
