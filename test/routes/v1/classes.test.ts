import { randomUUID } from 'node:crypto'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, json } from '../../helper.js'
import { createCreator, createUser, type TestUser } from '../../fixtures.js'
import { checkReplay, insertPost } from '../../post-fixtures.js'

async function openClass (app: FastifyInstance, owner: TestUser, body: object = { name: 'Class' }) {
  const res = await app.inject({ method: 'POST', url: '/v1/classes', headers: owner.headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`class not created: ${res.body}`)
  return json(res)
}

async function addStudent (app: FastifyInstance, owner: TestUser, classId: string, body: object) {
  const res = await app.inject({ method: 'POST', url: `/v1/classes/${classId}/students`, headers: owner.headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`student not created: ${res.body}`)
  return json(res)
}

t.test('POST /v1/classes: a creator opens a class, optionally for one of their courses', async t => {
  const app = await build(t)
  const owner = await createCreator(app, { firstName: 'Ada', lastName: 'L' })
  const other = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const res = await app.inject({
    method: 'POST',
    url: '/v1/classes',
    headers: owner.headers,
    payload: { name: 'Evening', course_id: course, starts_date: '2026-12-01' }
  })
  t.equal(res.statusCode, 201)
  const cls = json(res)
  t.equal(res.headers.location, `/v1/classes/${cls.id}`)
  t.match(cls, {
    name: 'Evening',
    course_id: course,
    starts_date: '2026-12-01',
    owner: { id: owner.id, first_name: 'Ada', last_name: 'L', username: owner.username }
  })
  t.notOk('email' in cls.owner)
  const bare = await openClass(app, owner, { name: 'Bare' })
  t.equal(bare.course_id, null)
  t.equal(bare.starts_date, null)

  const article = await insertPost(app, owner.id)
  const notCourse = await app.inject({ method: 'POST', url: '/v1/classes', headers: owner.headers, payload: { name: 'x', course_id: article } })
  t.equal(notCourse.statusCode, 422)
  t.equal(json(notCourse).errors[0].field, '/course_id')
  const missing = await app.inject({ method: 'POST', url: '/v1/classes', headers: owner.headers, payload: { name: 'x', course_id: randomUUID() } })
  t.equal(missing.statusCode, 422)
  const othersCourse = await app.inject({ method: 'POST', url: '/v1/classes', headers: other.headers, payload: { name: 'x', course_id: course } })
  t.equal(othersCourse.statusCode, 403)
  t.equal(json(othersCourse).code, 'UserNotOwner')
  for (const payload of [
    {},
    { name: '' },
    { name: 'x', starts_date: '2026-13-01' },
    { name: 'x', starts_date: '2026-12-01T00:00:00Z' },
    { name: 'x', course_id: 'nope' },
    { name: 'x', extra: 1 }
  ]) {
    t.equal((await app.inject({ method: 'POST', url: '/v1/classes', headers: owner.headers, payload })).statusCode, 422, JSON.stringify(payload))
  }
})

t.test("POST /v1/classes: another creator's draft or scheduled course answers exactly as a missing one", async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const later = new Date(Date.now() + 86_400_000).toISOString()
  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const scheduled = await insertPost(app, owner.id, { type: 'COURSE', published_at: later })
  const published = await insertPost(app, owner.id, { type: 'COURSE' })
  const post = (user: TestUser, courseId: string) =>
    app.inject({ method: 'POST', url: '/v1/classes', headers: user.headers, payload: { name: 'x', course_id: courseId } })

  // The owner may plan a class for a course that is not out yet.
  for (const id of [draft, scheduled, published]) t.equal((await post(owner, id)).statusCode, 201)

  const missingId = randomUUID()
  const missing = await post(other, missingId)
  t.equal(missing.statusCode, 422)
  for (const [name, id] of [
    ['draft', draft],
    ['scheduled', scheduled]
  ]) {
    const res = await post(other, id)
    t.equal(res.statusCode, missing.statusCode, name)
    t.same(res.headers['content-type'], missing.headers['content-type'], name)
    t.same(json(res), JSON.parse(missing.body.replaceAll(missingId, id)), `${name}: the body of a missing course`)
  }
  // A published course is public anyway: naming it says only that it is not yours.
  const othersPublished = await post(other, published)
  t.equal(othersPublished.statusCode, 403)
  t.equal(json(othersPublished).code, 'UserNotOwner')
})

t.test('starts_date: years 0001 to 9999 round-trip exactly; year 0000 is 422 on every database', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const dates = ['0001-01-01', '0004-02-29', '0099-12-31', '0100-01-01', '1999-12-31', '9999-12-31']
  for (const date of dates) {
    const cls = await openClass(app, owner, { name: date, starts_date: date })
    t.equal(cls.starts_date, date, `${date}: the answer`)
    t.equal(json(await app.inject({ method: 'GET', url: `/v1/classes/${cls.id}`, headers: owner.headers })).starts_date, date, `${date}: read back`)
  }
  const list = json(await app.inject({ method: 'GET', url: `/v1/classes?owner_id=${owner.id}&sort=starts_date&limit=100`, headers: owner.headers }))
  t.same(
    list.classes.map((c: { starts_date: string }) => c.starts_date),
    dates,
    'sorted by their true year'
  )
  for (const date of ['0000-01-01', '0000-12-31', '0100-02-29', '10000-01-01']) {
    const res = await app.inject({ method: 'POST', url: '/v1/classes', headers: owner.headers, payload: { name: 'x', starts_date: date } })
    t.equal(res.statusCode, 422, date)
    t.equal(json(res).errors?.[0]?.field, '/starts_date', date)
  }
})

t.test('POST /v1/classes: 401 without a token, 403 for non-creators and banned users', async t => {
  const app = await build(t)
  const user = await createUser(app)
  const banned = await createCreator(app, { active: false })
  t.equal((await app.inject({ method: 'POST', url: '/v1/classes', payload: { name: 'x' } })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'POST', url: '/v1/classes', headers: user.headers, payload: { name: 'x' } })).code, 'UserNotCreator')
  t.equal(json(await app.inject({ method: 'POST', url: '/v1/classes', headers: banned.headers, payload: { name: 'x' } })).code, 'UserIsBanned')
})

t.test('POST /v1/classes honours Idempotency-Key', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  await checkReplay(t, app, '/v1/classes', owner, { name: 'Once' })
})

t.test('GET /v1/classes and /v1/classes/{classId}: any signed-in user; filters, sort, ETag, 404', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const reader = await createUser(app)
  const banned = await createUser(app, { active: false })
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  await openClass(app, owner, { name: 'b', course_id: course, starts_date: '2026-02-01' })
  await openClass(app, owner, { name: 'a', starts_date: '2026-01-01' })
  const c = await openClass(app, other, { name: 'c' })
  t.equal((await app.inject({ method: 'GET', url: '/v1/classes' })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/classes', headers: banned.headers })).code, 'UserIsBanned')
  const names = async (q: string) =>
    json(await app.inject({ method: 'GET', url: `/v1/classes?${q}`, headers: reader.headers })).classes.map((x: any) => x.name)
  t.same(await names('sort=name'), ['a', 'b', 'c'])
  t.same(await names('sort=starts_date'), ['a', 'b', 'c'], 'a class without a date sorts last')
  t.same(await names(`owner_id=${owner.id}&sort=-name`), ['b', 'a'])
  t.same(await names(`course_id=${course}`), ['b'])
  const paged = await app.inject({ method: 'GET', url: '/v1/classes?sort=name&limit=1&offset=1', headers: reader.headers })
  t.equal(json(paged).total, 3)
  t.match(paged.headers.link, /limit=1&offset=2>; rel="next"/)
  for (const q of ['sort=owner', 'limit=101', 'page=1', 'course_id=x']) {
    t.equal((await app.inject({ method: 'GET', url: `/v1/classes?${q}`, headers: reader.headers })).statusCode, 422, q)
  }
  const one = await app.inject({ method: 'GET', url: `/v1/classes/${c.id}`, headers: reader.headers })
  t.equal(one.statusCode, 200)
  t.same(json(one), c)
  t.equal(
    (await app.inject({ method: 'GET', url: `/v1/classes/${c.id}`, headers: { ...reader.headers, 'if-none-match': one.headers.etag as string } }))
      .statusCode,
    304
  )
  t.equal((await app.inject({ method: 'GET', url: `/v1/classes/${c.id}` })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/classes/${randomUUID()}`, headers: reader.headers })).code, 'ClassNotFound')
})

t.test("a draft or scheduled course's classes: hidden from everyone's lists and reads but its creator's, as if missing", async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const reader = await createUser(app)
  const later = new Date(Date.now() + 86_400_000).toISOString()
  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const scheduled = await insertPost(app, owner.id, { type: 'COURSE', published_at: later })
  const published = await insertPost(app, owner.id, { type: 'COURSE' })
  const inDraft = await openClass(app, owner, { name: 'draft', course_id: draft })
  const inScheduled = await openClass(app, owner, { name: 'scheduled', course_id: scheduled })
  await openClass(app, owner, { name: 'published', course_id: published })
  await openClass(app, owner, { name: 'bare' })
  const get = (user: TestUser, url: string) => app.inject({ method: 'GET', url, headers: user.headers })
  const list = async (user: TestUser, q = '') => json(await get(user, `/v1/classes?sort=name${q}`))
  const names = (page: { classes: Array<{ name: string }> }) => page.classes.map(c => c.name)

  t.same(names(await list(owner)), ['bare', 'draft', 'published', 'scheduled'], "the course's creator sees every class")
  t.equal(json(await get(owner, `/v1/classes/${inDraft.id}`)).course_id, draft, 'and reads one of a draft course')
  const missingCourse = await list(other, `&course_id=${randomUUID()}`)
  for (const user of [other, reader]) {
    const all = await list(user)
    t.same(names(all), ['bare', 'published'], 'anyone else: not listed')
    t.equal(all.total, 2, 'nor counted')
    t.same(names(await list(user, `&owner_id=${owner.id}`)), ['bare', 'published'], 'nor listed by owner')
    for (const [name, course] of [
      ['draft', draft],
      ['scheduled', scheduled]
    ]) {
      t.same(await list(user, `&course_id=${course}`), missingCourse, `${name}: by course, the answer of a missing course`)
    }
    for (const cls of [inDraft, inScheduled]) {
      for (const path of ['', '/students']) {
        const missingId = randomUUID()
        const missing = await get(user, `/v1/classes/${missingId}${path}`)
        const res = await get(user, `/v1/classes/${cls.id}${path}`)
        t.equal(res.statusCode, 404, `${cls.name}${path}: 404, not 403`)
        t.same(json(res), JSON.parse(missing.body.replaceAll(missingId, cls.id)), `${cls.name}${path}: the body of a missing class`)
      }
      const add = await app.inject({
        method: 'POST',
        url: `/v1/classes/${cls.id}/students`,
        headers: user.headers,
        payload: { first_name: 'Eve', sex: 'F' }
      })
      t.equal(json(add).code, 'ClassNotFound', `${cls.name}: adding a student is 404 too`)
    }
  }

  // Once the course is out, its classes are everyone's to see.
  await app.db
    .updateTable('post')
    .set({ published_at: new Date(Date.now() - 1000).toISOString() })
    .where('id', '=', draft)
    .execute()
  t.same(names(await list(reader)), ['bare', 'draft', 'published'])
  t.equal((await get(reader, `/v1/classes/${inDraft.id}`)).statusCode, 200)
  t.equal(json(await get(reader, `/v1/classes/${inDraft.id}/students`)).code, 'UserNotOwner', "students stay the owner's")
})

t.test('POST /v1/classes/{classId}/students: class owner only; validation', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const banned = await createCreator(app, { active: false })
  const cls = await openClass(app, owner)
  const url = `/v1/classes/${cls.id}/students`
  const body = { first_name: 'Grace', sex: 'F' }
  t.equal((await app.inject({ method: 'POST', url, payload: body })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'POST', url, headers: other.headers, payload: body })).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'POST', url, headers: banned.headers, payload: body })).code, 'UserIsBanned')
  t.equal(
    json(await app.inject({ method: 'POST', url: `/v1/classes/${randomUUID()}/students`, headers: owner.headers, payload: body })).code,
    'ClassNotFound'
  )
  const res = await app.inject({ method: 'POST', url, headers: owner.headers, payload: body })
  t.equal(res.statusCode, 201)
  const student = json(res)
  t.equal(res.headers.location, `${url}/${student.id}`)
  t.match(student, { class_id: cls.id, first_name: 'Grace', last_name: null, sex: 'F', email: null })
  const full = await addStudent(app, owner, cls.id, { first_name: 'x'.repeat(128), last_name: 'Hopper', sex: 'X', email: 'g@example.com' })
  t.equal(full.email, 'g@example.com')
  for (const bad of [
    { first_name: '' },
    { first_name: 'x'.repeat(129) },
    { sex: 'f' },
    { sex: 'Q' },
    { sex: undefined },
    { first_name: undefined },
    { email: 'not-an-email' },
    { class_id: cls.id }
  ]) {
    const r = await app.inject({ method: 'POST', url, headers: owner.headers, payload: { ...body, ...bad } })
    t.equal(r.statusCode, 422, JSON.stringify(bad))
  }
  const badSex = await app.inject({ method: 'POST', url, headers: owner.headers, payload: { ...body, sex: 'Q' } })
  t.same(
    json(badSex).errors.map((e: any) => e.field),
    ['/sex'],
    'one clear error for a bad sex'
  )
})

t.test('POST /v1/classes/{classId}/students honours Idempotency-Key', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const cls = await openClass(app, owner)
  await checkReplay(t, app, `/v1/classes/${cls.id}/students`, owner, { first_name: 'A', sex: 'M' })
})

t.test('GET /v1/classes/{classId}/students: owner only, filter sex, both paging forms, Link in the form used', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const cls = await openClass(app, owner)
  const otherClass = await openClass(app, owner, { name: 'other' })
  await addStudent(app, owner, otherClass.id, { first_name: 'elsewhere', sex: 'F' })
  for (const [first, sex] of [
    ['a', 'F'],
    ['b', 'M'],
    ['c', 'F'],
    ['d', 'X'],
    ['e', 'F']
  ]) { await addStudent(app, owner, cls.id, { first_name: first, sex }) }
  const url = `/v1/classes/${cls.id}/students`
  const get = (q: string, user = owner) => app.inject({ method: 'GET', url: `${url}?${q}`, headers: user.headers })
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 401)
  t.equal(json(await get('')).total, 5)
  t.equal(json(await get('', other)).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/classes/${randomUUID()}/students`, headers: owner.headers })).code, 'ClassNotFound')
  const names = async (q: string) => json(await get(q)).students.map((s: any) => s.first_name)
  t.same(await names(''), ['a', 'b', 'c', 'd', 'e'], 'default order: as added')
  t.same(await names('sex=F'), ['a', 'c', 'e'])
  t.equal(json(await get('sex=F')).total, 3)
  t.same(await names('sex=M'), ['b'])
  t.same(await names('sort=-first_name&limit=2'), ['e', 'd'])

  const offsetForm = await get('sort=first_name&limit=2&offset=2')
  t.same(
    json(offsetForm).students.map((s: any) => s.first_name),
    ['c', 'd']
  )
  t.equal(json(offsetForm).total, 5)
  t.match(offsetForm.headers.link, /limit=2&offset=4>; rel="next"/)
  t.match(offsetForm.headers.link, /limit=2&offset=0>; rel="prev"/)
  t.notMatch(offsetForm.headers.link, /page=/)

  const pageForm = await get('sort=first_name&page=2&count=2')
  t.equal(pageForm.statusCode, 200)
  t.same(
    json(pageForm).students.map((s: any) => s.first_name),
    ['c', 'd']
  )
  t.equal(json(pageForm).total, 5)
  t.match(pageForm.headers.link, /page=3&count=2>; rel="next"/)
  t.match(pageForm.headers.link, /page=1&count=2>; rel="prev"/)
  t.notMatch(pageForm.headers.link, /limit=|offset=/)
  t.same(await names('page=1'), ['a', 'b', 'c', 'd', 'e'], 'page alone: count defaults to 10')
  t.same(await names('count=2'), ['a', 'b'], 'count alone: page 1')
  t.same(await names('sex=F&page=2&count=2'), ['e'])
  t.same(await names('page=9&count=2'), [])
  t.match((await get('page=9&count=2')).headers.link, /page=3&count=2>; rel="prev"/, 'prev from beyond the end is the last page')
  t.same(await names('count=100'), ['a', 'b', 'c', 'd', 'e'])
  t.same(await names('page=90071992547409&count=100'), [], 'the last page number (its offset is still an exact integer)')
  t.equal((await get('page=90071992547410')).statusCode, 422, 'one page further is refused')
  t.equal((await get('page=1e308')).statusCode, 422)

  for (const q of ['page=1&limit=2', 'count=2&offset=1', 'page=2&count=2&limit=2&offset=0']) {
    const res = await get(q)
    t.equal(res.statusCode, 422, q)
    t.equal(json(res).code, 'ValidationFailed')
    t.match(json(res).errors[0], { in: 'query', rule: 'dependencies', field: /^\/(page|count)$/, message: /^cannot be combined with (limit|offset)$/ })
  }
  for (const q of ['page=0', 'count=0', 'count=101', 'limit=0', 'limit=101', 'offset=-1', 'page=x', 'sex=f', 'sex=Q', 'sort=sex', 'age=3']) {
    t.equal((await get(q)).statusCode, 422, q)
  }
})

t.test('GET /v1/classes/{classId}/students/{studentId}: owner only, ETag, other class 404', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const cls = await openClass(app, owner)
  const otherClass = await openClass(app, owner, { name: 'other' })
  const student = await addStudent(app, owner, cls.id, { first_name: 'A', sex: 'X' })
  const url = `/v1/classes/${cls.id}/students/${student.id}`
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'GET', url, headers: other.headers })).code, 'UserNotOwner')
  const res = await app.inject({ method: 'GET', url, headers: owner.headers })
  t.equal(res.statusCode, 200)
  t.same(json(res), student)
  t.equal((await app.inject({ method: 'GET', url, headers: { ...owner.headers, 'if-none-match': res.headers.etag as string } })).statusCode, 304)
  const wrong = await app.inject({ method: 'GET', url: `/v1/classes/${otherClass.id}/students/${student.id}`, headers: owner.headers })
  t.equal(wrong.statusCode, 404)
  t.equal(json(wrong).code, 'StudentNotFound')
  t.equal(
    json(await app.inject({ method: 'GET', url: `/v1/classes/${randomUUID()}/students/${student.id}`, headers: owner.headers })).code,
    'ClassNotFound'
  )
  t.equal((await app.inject({ method: 'GET', url: `/v1/classes/${cls.id}/students/nope`, headers: owner.headers })).statusCode, 422)
})

t.test('PUT and PATCH a class: the owner changes it; others 403 (404 when hidden), stale If-Match 412, bad bodies 422', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const othersCourse = await insertPost(app, other.id, { type: 'COURSE' })
  const cls = await openClass(app, owner, { name: 'Evening', starts_date: '2026-12-01' })
  const url = `/v1/classes/${cls.id}`
  const read = () => app.inject({ method: 'GET', url, headers: owner.headers })
  const before = await read()

  const put = await write(app, 'PUT', url, owner, { name: 'Morning', course_id: course }, before.headers.etag)
  t.equal(put.statusCode, 200)
  t.match(
    json(put),
    { id: cls.id, name: 'Morning', course_id: course, starts_date: null, owner: { id: owner.id } },
    'PUT replaces: an absent start date is null'
  )
  t.equal((await read()).headers.etag, put.headers.etag)
  const stale = await write(app, 'PATCH', url, owner, { name: 'x' }, before.headers.etag)
  t.equal(stale.statusCode, 412)
  const notOwner = await app.inject({ method: 'PATCH', url, headers: other.headers, payload: { name: 'Mine now' } })
  t.equal(notOwner.statusCode, 403)
  t.equal(json(notOwner).code, 'UserNotOwner')
  const broken = [{ name: null }, { name: '' }, { starts_date: '2026-13-01' }, { course_id: randomUUID() }, { owner_id: other.id }]
  for (const payload of broken) {
    const res = await app.inject({ method: 'PATCH', url, headers: owner.headers, payload })
    t.equal(res.statusCode, 422, JSON.stringify(payload))
  }
  t.equal(json(await write(app, 'PATCH', url, owner, { course_id: othersCourse })).code, 'UserNotOwner', "another creator's course")
  t.match(json(await read()), { name: 'Morning', course_id: course, starts_date: null }, 'nothing written by the refused requests')

  const patched = await write(app, 'PATCH', url, owner, { course_id: null, starts_date: '2027-01-11' })
  t.equal(patched.statusCode, 200)
  t.match(json(patched), { name: 'Morning', course_id: null, starts_date: '2027-01-11' })

  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const hidden = await openClass(app, owner, { name: 'Planned', course_id: draft })
  const res = await app.inject({ method: 'PUT', url: `/v1/classes/${hidden.id}`, headers: other.headers, payload: { name: 'x' } })
  t.equal(res.statusCode, 404, 'a class the caller cannot see is 404')
  t.equal(json(res).code, 'ClassNotFound')
})

t.test('DELETE /v1/classes/{classId}: the owner closes it and its students go in the same change; a second DELETE is 404', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const cls = await openClass(app, owner)
  const keep = await openClass(app, owner, { name: 'Keep' })
  for (const name of ['A', 'B', 'C']) await addStudent(app, owner, cls.id, { first_name: name, sex: 'X' })
  await addStudent(app, owner, keep.id, { first_name: 'D', sex: 'F' })
  const url = `/v1/classes/${cls.id}`
  const total = async () => json(await app.inject({ method: 'GET', url: '/v1/classes', headers: owner.headers })).total

  t.equal((await app.inject({ method: 'DELETE', url, headers: other.headers })).statusCode, 403)
  t.equal((await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': '"stale"' } })).statusCode, 412)
  t.equal(await total(), 2, 'nothing removed by the refused requests')
  const etag = (await app.inject({ method: 'GET', url, headers: owner.headers })).headers.etag as string
  const res = await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': etag } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal(await total(), 1, 'the total is exact at once')
  const students = await app.db.selectFrom('student').select('first_name').execute()
  t.same(
    students.map(s => s.first_name),
    ['D'],
    "its students went, the other class's stayed"
  )
  const again = await app.inject({ method: 'DELETE', url, headers: owner.headers })
  t.equal(again.statusCode, 404)
  t.equal(json(again).code, 'ClassNotFound')
  t.equal((await app.inject({ method: 'GET', url: `${url}/students`, headers: owner.headers })).statusCode, 404)
})

t.test('PUT, PATCH and DELETE /v1/classes/{classId}/students/{studentId}: class owner only; If-Match; totals exact', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const cls = await openClass(app, owner)
  const otherClass = await openClass(app, owner, { name: 'other' })
  const student = await addStudent(app, owner, cls.id, { first_name: 'Mary', last_name: 'Smervil', sex: 'F', email: 'mary@example.com' })
  await addStudent(app, owner, cls.id, { first_name: 'Ann', sex: 'F' })
  const url = `/v1/classes/${cls.id}/students/${student.id}`
  const read = () => app.inject({ method: 'GET', url, headers: owner.headers })
  const list = async () => json(await app.inject({ method: 'GET', url: `/v1/classes/${cls.id}/students`, headers: owner.headers }))
  const before = await read()

  const patched = await write(app, 'PATCH', url, owner, { last_name: 'Somerville', email: null }, before.headers.etag)
  t.equal(patched.statusCode, 200)
  t.match(json(patched), { first_name: 'Mary', last_name: 'Somerville', sex: 'F', email: null })
  const put = await write(app, 'PUT', url, owner, { first_name: 'Mary', sex: 'X' }, patched.headers.etag)
  t.match(json(put), { first_name: 'Mary', last_name: null, sex: 'X', email: null }, 'PUT replaces')
  t.equal((await write(app, 'PUT', url, owner, { first_name: 'Z', sex: 'M' }, before.headers.etag)).statusCode, 412)
  t.equal(json(await app.inject({ method: 'PATCH', url, headers: other.headers, payload: { first_name: 'Z' } })).code, 'UserNotOwner')
  for (const payload of [{ sex: 'Q' }, { first_name: null }, { email: 'not an address' }, { class_id: otherClass.id }]) {
    t.equal((await app.inject({ method: 'PATCH', url, headers: owner.headers, payload })).statusCode, 422, JSON.stringify(payload))
  }
  const elsewhere = `/v1/classes/${otherClass.id}/students/${student.id}`
  t.equal(json(await write(app, 'PATCH', elsewhere, owner, { first_name: 'Z' })).code, 'StudentNotFound')
  t.same(json(await read()), json(put), 'nothing written by the refused requests')

  t.equal(json(await app.inject({ method: 'DELETE', url, headers: other.headers })).code, 'UserNotOwner')
  t.equal((await write(app, 'DELETE', url, owner, undefined, before.headers.etag)).statusCode, 412)
  t.equal((await list()).total, 2)
  const res = await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': put.headers.etag as string } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.same(
    (await list()).students.map((s: { first_name: string }) => s.first_name),
    ['Ann']
  )
  t.equal((await list()).total, 1, 'the total is exact at once')
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: owner.headers })).code, 'StudentNotFound', 'a second DELETE is 404')
})

/** A write by `user`, with `If-Match: etag` when one is given. */
function write (app: FastifyInstance, method: 'PUT' | 'PATCH' | 'DELETE', url: string, user: TestUser, payload?: object, etag?: unknown) {
  const headers = etag === undefined ? user.headers : { ...user.headers, 'if-match': String(etag) }
  return app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) })
}
