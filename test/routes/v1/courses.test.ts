import { randomUUID } from 'node:crypto'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, json } from '../../helper.js'
import { createCreator, createUser, type TestUser } from '../../fixtures.js'
import { checkReplay, insertPost } from '../../post-fixtures.js'

async function addChapter (app: FastifyInstance, owner: TestUser, courseId: string, body: object) {
  const res = await app.inject({ method: 'POST', url: `/v1/courses/${courseId}/chapters`, headers: owner.headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`chapter not created: ${res.body}`)
  return json(res)
}

async function addLesson (app: FastifyInstance, owner: TestUser, courseId: string, chapterId: string, body: object) {
  const res = await app.inject({
    method: 'POST',
    url: `/v1/courses/${courseId}/chapters/${chapterId}/lessons`,
    headers: owner.headers,
    payload: body
  })
  if (res.statusCode !== 201) throw new Error(`lesson not created: ${res.body}`)
  return json(res)
}

t.test("GET /v1/courses/{courseId}: a COURSE post with its chapter count; ARTICLE, missing and others' drafts are 404", async t => {
  const app = await build(t)
  const owner = await createCreator(app, { firstName: 'Ada' })
  const reader = await createUser(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE', title: 'Learn', tags: ['x'] })
  const article = await insertPost(app, owner.id)
  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  await addChapter(app, owner, course, { title: 'One' })
  const res = await app.inject({ method: 'GET', url: `/v1/courses/${course}` })
  t.equal(res.statusCode, 200)
  t.match(json(res), { id: course, type: 'COURSE', title: 'Learn', tags: ['x'], chapters_count: 1, creator: { id: owner.id, first_name: 'Ada' } })
  t.equal(
    (await app.inject({ method: 'GET', url: `/v1/courses/${course}`, headers: { 'if-none-match': res.headers.etag as string } })).statusCode,
    304
  )
  for (const id of [article, randomUUID()]) {
    const r = await app.inject({ method: 'GET', url: `/v1/courses/${id}` })
    t.equal(r.statusCode, 404)
    t.equal(json(r).code, 'CourseNotFound')
  }
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${draft}`, headers: reader.headers })).code, 'CourseNotFound')
  t.equal((await app.inject({ method: 'GET', url: `/v1/courses/${draft}`, headers: owner.headers })).statusCode, 200, 'the creator sees their draft')
  t.equal((await app.inject({ method: 'GET', url: '/v1/courses/nope' })).statusCode, 422)
})

t.test('POST /v1/courses/{courseId}/chapters: course owner only; appended or inserted at a position', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const banned = await createCreator(app, { active: false })
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const article = await insertPost(app, owner.id)
  const url = `/v1/courses/${course}/chapters`
  t.equal((await app.inject({ method: 'POST', url, payload: { title: 'x' } })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'POST', url, headers: other.headers, payload: { title: 'x' } })).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'POST', url, headers: banned.headers, payload: { title: 'x' } })).code, 'UserIsBanned')
  t.equal(
    json(await app.inject({ method: 'POST', url: `/v1/courses/${article}/chapters`, headers: owner.headers, payload: { title: 'x' } })).code,
    'CourseNotFound'
  )
  for (const payload of [
    {},
    { title: '' },
    { title: 'x', position: 0 },
    { title: 'x', position: 1.5 },
    { title: 'x', position: 2 ** 53 },
    { title: 'x', position: 1e308 },
    { title: 'x', course_id: course }
  ]) {
    t.equal((await app.inject({ method: 'POST', url, headers: owner.headers, payload })).statusCode, 422, JSON.stringify(payload))
  }
  const res = await app.inject({ method: 'POST', url, headers: owner.headers, payload: { title: 'A' } })
  t.equal(res.statusCode, 201)
  const a = json(res)
  t.equal(res.headers.location, `/v1/chapters/${a.id}`)
  t.match(a, { course_id: course, title: 'A', position: 1 })
  t.equal((await addChapter(app, owner, course, { title: 'C' })).position, 2)
  t.equal((await addChapter(app, owner, course, { title: 'B', position: 2 })).position, 2, 'inserted there')
  t.equal((await addChapter(app, owner, course, { title: 'Z', position: 99 })).position, 4, 'past the end: appended')
  t.equal((await addChapter(app, owner, course, { title: 'First', position: 1 })).position, 1)
  const list = json(await app.inject({ method: 'GET', url }))
  t.same(
    list.chapters.map((c: any) => [c.title, c.position]),
    [
      ['First', 1],
      ['A', 2],
      ['B', 3],
      ['C', 4],
      ['Z', 5]
    ]
  )
  t.equal(list.total, 5)
})

t.test('POST /v1/courses/{courseId}/chapters honours Idempotency-Key', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  await checkReplay(t, app, `/v1/courses/${course}/chapters`, owner, { title: 'A' })
})

t.test('GET /v1/courses/{courseId}/chapters: position order, sort, paging, 404s', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  for (const title of ['b', 'c', 'a']) await addChapter(app, owner, course, { title })
  const url = `/v1/courses/${course}/chapters`
  const titles = async (q: string) => json(await app.inject({ method: 'GET', url: `${url}?${q}` })).chapters.map((c: any) => c.title)
  t.same(await titles(''), ['b', 'c', 'a'])
  t.same(await titles('sort=title'), ['a', 'b', 'c'])
  t.same(await titles('sort=-position'), ['a', 'c', 'b'])
  const paged = await app.inject({ method: 'GET', url: `${url}?limit=1&offset=1` })
  t.same(
    json(paged).chapters.map((c: any) => c.title),
    ['c']
  )
  t.equal(json(paged).total, 3)
  t.match(paged.headers.link, /rel="next"/)
  for (const q of ['sort=body', 'limit=0', 'position=1']) t.equal((await app.inject({ method: 'GET', url: `${url}?${q}` })).statusCode, 422, q)
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${randomUUID()}/chapters` })).code, 'CourseNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${draft}/chapters` })).code, 'CourseNotFound')
})

t.test('GET /v1/chapters/{chapterId}: one chapter, ETag, 404 when missing or its course is hidden', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const chapter = await addChapter(app, owner, course, { title: 'A' })
  const hidden = await addChapter(app, owner, draft, { title: 'H' })
  const res = await app.inject({ method: 'GET', url: `/v1/chapters/${chapter.id}` })
  t.equal(res.statusCode, 200)
  t.same(json(res), chapter)
  t.equal(
    (await app.inject({ method: 'GET', url: `/v1/chapters/${chapter.id}`, headers: { 'if-none-match': res.headers.etag as string } })).statusCode,
    304
  )
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/chapters/${randomUUID()}` })).code, 'ChapterNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/chapters/${hidden.id}` })).code, 'ChapterNotFound')
  t.equal((await app.inject({ method: 'GET', url: `/v1/chapters/${hidden.id}`, headers: owner.headers })).statusCode, 200)
})

t.test('POST /v1/courses/{courseId}/chapters/{chapterId}/lessons: owner only, positions, wrong course 404', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const banned = await createCreator(app, { active: false })
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const otherCourse = await insertPost(app, owner.id, { type: 'COURSE' })
  const chapter = await addChapter(app, owner, course, { title: 'A' })
  const url = `/v1/courses/${course}/chapters/${chapter.id}/lessons`
  t.equal((await app.inject({ method: 'POST', url, payload: { title: 'x' } })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'POST', url, headers: other.headers, payload: { title: 'x' } })).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'POST', url, headers: banned.headers, payload: { title: 'x' } })).code, 'UserIsBanned')
  const wrong = await app.inject({
    method: 'POST',
    url: `/v1/courses/${otherCourse}/chapters/${chapter.id}/lessons`,
    headers: owner.headers,
    payload: { title: 'x' }
  })
  t.equal(wrong.statusCode, 404)
  t.equal(json(wrong).code, 'ChapterNotFound')
  for (const payload of [{}, { title: '' }, { title: 'x', position: 0 }, { title: 'x', body: 5 }]) {
    t.equal((await app.inject({ method: 'POST', url, headers: owner.headers, payload })).statusCode, 422, JSON.stringify(payload))
  }
  const res = await app.inject({ method: 'POST', url, headers: owner.headers, payload: { title: 'L2', body: 'text' } })
  t.equal(res.statusCode, 201)
  const lesson = json(res)
  t.match(lesson, { chapter_id: chapter.id, title: 'L2', body: 'text', position: 1 })
  t.equal(res.headers.location, `/v1/lessons/${lesson.id}`)
  t.same(json(await app.inject({ method: 'GET', url: res.headers.location as string })), lesson)
  t.equal((await addLesson(app, owner, course, chapter.id, { title: 'L1', position: 1 })).body, null)
  await addLesson(app, owner, course, chapter.id, { title: 'L3' })
  const list = json(await app.inject({ method: 'GET', url }))
  t.same(
    list.lessons.map((l: any) => [l.title, l.position]),
    [
      ['L1', 1],
      ['L2', 2],
      ['L3', 3]
    ]
  )
})

t.test('POST lessons honours Idempotency-Key', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const chapter = await addChapter(app, owner, course, { title: 'A' })
  await checkReplay(t, app, `/v1/courses/${course}/chapters/${chapter.id}/lessons`, owner, { title: 'L' })
})

t.test('GET lessons: chapter under another course is 404; sort and paging; GET /v1/lessons/{lessonId}', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const otherCourse = await insertPost(app, owner.id, { type: 'COURSE' })
  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const chapter = await addChapter(app, owner, course, { title: 'A' })
  const hiddenChapter = await addChapter(app, owner, draft, { title: 'H' })
  const hiddenLesson = await addLesson(app, owner, draft, hiddenChapter.id, { title: 'secret' })
  for (const title of ['b', 'a', 'c']) await addLesson(app, owner, course, chapter.id, { title })
  const url = `/v1/courses/${course}/chapters/${chapter.id}/lessons`
  const titles = async (q: string) => json(await app.inject({ method: 'GET', url: `${url}?${q}` })).lessons.map((l: any) => l.title)
  t.same(await titles(''), ['b', 'a', 'c'])
  t.same(await titles('sort=title'), ['a', 'b', 'c'])
  t.same(await titles('limit=2&offset=2'), ['c'])
  t.equal((await app.inject({ method: 'GET', url: `${url}?sort=body` })).statusCode, 422)
  const wrong = await app.inject({ method: 'GET', url: `/v1/courses/${otherCourse}/chapters/${chapter.id}/lessons` })
  t.equal(wrong.statusCode, 404)
  t.equal(json(wrong).code, 'ChapterNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${randomUUID()}/chapters/${chapter.id}/lessons` })).code, 'CourseNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${draft}/chapters/${hiddenChapter.id}/lessons` })).code, 'CourseNotFound')
  const lesson = json(await app.inject({ method: 'GET', url: `${url}?sort=title&limit=1` })).lessons[0]
  const one = await app.inject({ method: 'GET', url: `/v1/lessons/${lesson.id}` })
  t.same(json(one), lesson)
  t.equal(
    (await app.inject({ method: 'GET', url: `/v1/lessons/${lesson.id}`, headers: { 'if-none-match': one.headers.etag as string } })).statusCode,
    304
  )
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/lessons/${hiddenLesson.id}` })).code, 'LessonNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/lessons/${randomUUID()}` })).code, 'LessonNotFound')
})

/** The titles of a course's chapters (or a chapter's lessons) with their places, in list order. */
async function order (app: FastifyInstance, url: string, key: 'chapters' | 'lessons', owner: TestUser) {
  const body = json(await app.inject({ method: 'GET', url: `${url}?limit=100`, headers: owner.headers }))
  return { places: body[key].map((c: { title: string; position: number }) => `${c.title}${c.position}`).join(' '), total: body.total }
}

t.test('PUT and PATCH /v1/chapters/{chapterId}: the course owner renames and moves; the others shift, places stay 1..n', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const list = `/v1/courses/${course}/chapters`
  const [a, b, , d] = [
    await addChapter(app, owner, course, { title: 'A' }),
    await addChapter(app, owner, course, { title: 'B' }),
    await addChapter(app, owner, course, { title: 'C' }),
    await addChapter(app, owner, course, { title: 'D' })
  ]
  const url = `/v1/chapters/${d.id}`
  const before = await app.inject({ method: 'GET', url })
  const moveTo = (id: string, position: unknown) => write(app, 'PATCH', `/v1/chapters/${id}`, owner, { position })

  const up = await write(app, 'PATCH', url, owner, { position: 2 }, before.headers.etag)
  t.equal(up.statusCode, 200)
  t.match(json(up), { title: 'D', position: 2 })
  t.equal((await order(app, list, 'chapters', owner)).places, 'A1 D2 B3 C4', 'moved up: the ones between shift down')
  t.equal((await moveTo(a.id, 3)).statusCode, 200)
  t.equal((await order(app, list, 'chapters', owner)).places, 'D1 B2 A3 C4', 'moved down: the ones between shift up')
  t.equal(json(await moveTo(b.id, 99)).position, 4, 'past the end: the last place')
  t.equal((await order(app, list, 'chapters', owner)).places, 'D1 A2 C3 B4')
  const renamed = await app.inject({ method: 'PUT', url, headers: owner.headers, payload: { title: 'Intro' } })
  t.match(json(renamed), { title: 'Intro', position: 1 }, 'PUT without a position keeps the place')
  t.equal(json(await write(app, 'PUT', url, owner, { title: 'Intro', position: 4 })).position, 4, 'PUT with one moves')
  t.equal((await order(app, list, 'chapters', owner)).places, 'A1 C2 B3 Intro4')

  const stale = await write(app, 'PATCH', url, owner, { position: 1 }, before.headers.etag)
  t.equal(stale.statusCode, 412)
  t.equal(json(await app.inject({ method: 'PATCH', url, headers: other.headers, payload: { title: 'x' } })).code, 'UserNotOwner')
  for (const position of [0, -1, 1.5, null, '2']) {
    t.equal((await moveTo(d.id, position)).statusCode, 422, `position ${JSON.stringify(position)}`)
  }
  t.equal((await app.inject({ method: 'PATCH', url, headers: owner.headers, payload: { title: null } })).statusCode, 422)
  t.equal((await app.inject({ method: 'PATCH', url, headers: owner.headers, payload: { course_id: randomUUID() } })).statusCode, 422)
  t.equal((await order(app, list, 'chapters', owner)).places, 'A1 C2 B3 Intro4', 'nothing written by the refused requests')

  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const hidden = await addChapter(app, owner, draft, { title: 'Secret' })
  const res = await app.inject({ method: 'PATCH', url: `/v1/chapters/${hidden.id}`, headers: other.headers, payload: { title: 'x' } })
  t.equal(res.statusCode, 404, 'a chapter of a course the caller cannot see is 404')
  t.equal(json(res).code, 'ChapterNotFound')
})

t.test('DELETE a chapter: its lessons go with it, the later chapters move up, totals exact; a second DELETE is 404', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const list = `/v1/courses/${course}/chapters`
  const a = await addChapter(app, owner, course, { title: 'A' })
  const b = await addChapter(app, owner, course, { title: 'B' })
  await addChapter(app, owner, course, { title: 'C' })
  for (const title of ['x', 'y']) await addLesson(app, owner, course, b.id, { title })
  await addLesson(app, owner, course, a.id, { title: 'kept' })
  const url = `/v1/chapters/${b.id}`

  t.equal(json(await app.inject({ method: 'DELETE', url, headers: other.headers })).code, 'UserNotOwner')
  t.equal((await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': '"stale"' } })).statusCode, 412)
  t.equal((await order(app, list, 'chapters', owner)).total, 3, 'nothing removed by the refused requests')
  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string
  const res = await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': etag } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.same(await order(app, list, 'chapters', owner), { places: 'A1 C2', total: 2 })
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${course}` })).chapters_count, 2)
  t.same(
    (await app.db.selectFrom('lesson').select('title').execute()).map(l => l.title),
    ['kept'],
    "its lessons went, the others' stayed"
  )
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: owner.headers })).code, 'ChapterNotFound', 'a second DELETE is 404')
})

t.test('PUT, PATCH and DELETE /v1/lessons/{lessonId}: course owner only; moves within the chapter; If-Match; totals exact', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const chapter = await addChapter(app, owner, course, { title: 'Ch' })
  const list = `/v1/courses/${course}/chapters/${chapter.id}/lessons`
  const [a, , c] = [
    await addLesson(app, owner, course, chapter.id, { title: 'A', body: 'text' }),
    await addLesson(app, owner, course, chapter.id, { title: 'B' }),
    await addLesson(app, owner, course, chapter.id, { title: 'C' })
  ]
  const url = `/v1/lessons/${a.id}`
  const before = await app.inject({ method: 'GET', url })

  const moved = await write(app, 'PATCH', url, owner, { position: 3, title: 'A2' }, before.headers.etag)
  t.equal(moved.statusCode, 200)
  t.match(json(moved), { title: 'A2', body: 'text', position: 3 }, 'an absent body is kept by PATCH')
  t.equal((await order(app, list, 'lessons', owner)).places, 'B1 C2 A23')
  const put = await app.inject({ method: 'PUT', url, headers: owner.headers, payload: { title: 'A3' } })
  t.match(json(put), { title: 'A3', body: null, position: 3 }, 'PUT replaces the body, keeps the place')
  t.equal((await write(app, 'PUT', url, owner, { title: 'x' }, before.headers.etag)).statusCode, 412)
  t.equal(json(await app.inject({ method: 'PUT', url, headers: other.headers, payload: { title: 'x' } })).code, 'UserNotOwner')
  t.equal((await app.inject({ method: 'PATCH', url, headers: owner.headers, payload: { chapter_id: chapter.id } })).statusCode, 422)
  t.equal((await app.inject({ method: 'PATCH', url, headers: owner.headers, payload: { position: 0 } })).statusCode, 422)

  t.equal(json(await app.inject({ method: 'DELETE', url: `/v1/lessons/${c.id}`, headers: other.headers })).code, 'UserNotOwner')
  const res = await app.inject({ method: 'DELETE', url: `/v1/lessons/${c.id}`, headers: owner.headers })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.same(await order(app, list, 'lessons', owner), { places: 'B1 A32', total: 2 }, 'the later lessons moved up; the total is exact')
  t.equal(json(await write(app, 'DELETE', `/v1/lessons/${c.id}`, owner)).code, 'LessonNotFound', 'a second DELETE is 404')
  t.equal((await app.inject({ method: 'GET', url: `/v1/lessons/${c.id}` })).statusCode, 404)
})

t.test('concurrent moves, inserts and deletes never leave two chapters or lessons at one place', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const chapters = []
  for (let i = 0; i < 8; i++) chapters.push(await addChapter(app, owner, course, { title: `c${i}` }))
  const lessons = []
  for (let i = 0; i < 8; i++) lessons.push(await addLesson(app, owner, course, chapters[0].id, { title: `l${i}` }))
  const patch = (url: string, position: number) => app.inject({ method: 'PATCH', url, headers: owner.headers, payload: { position } })
  const results = await Promise.all([
    ...chapters.slice(1).map((c, i) => patch(`/v1/chapters/${c.id}`, ((i * 5) % 8) + 1)),
    ...lessons.slice(0, 7).map((l, i) => patch(`/v1/lessons/${l.id}`, ((i * 3) % 8) + 1)),
    app.inject({ method: 'POST', url: `/v1/courses/${course}/chapters`, headers: owner.headers, payload: { title: 'new', position: 2 } }),
    app.inject({
      method: 'POST',
      url: `/v1/courses/${course}/chapters/${chapters[0].id}/lessons`,
      headers: owner.headers,
      payload: { title: 'new', position: 1 }
    }),
    app.inject({ method: 'DELETE', url: `/v1/lessons/${lessons[7].id}`, headers: owner.headers })
  ])
  t.same(
    results.map(r => r.statusCode).filter(s => s >= 300),
    [],
    'every change went through'
  )
  const places = async (table: 'chapter' | 'lesson', column: 'course_id' | 'chapter_id', parent: string) =>
    (
      await app.db
        .selectFrom(table as 'chapter')
        .select('position')
        .where(column as 'course_id', '=', parent)
        .execute()
    )
      .map(r => r.position)
      .sort((x, y) => x - y)
  t.same(await places('chapter', 'course_id', course), [1, 2, 3, 4, 5, 6, 7, 8, 9], 'chapters at 1..9, each once')
  t.same(await places('lesson', 'chapter_id', chapters[0].id), [1, 2, 3, 4, 5, 6, 7, 8], 'lessons at 1..8, each once')
})

/** A write by `user`, with `If-Match: etag` when one is given. */
function write (app: FastifyInstance, method: 'PUT' | 'PATCH' | 'DELETE', url: string, user: TestUser, payload?: object, etag?: unknown) {
  const headers = etag === undefined ? user.headers : { ...user.headers, 'if-match': String(etag) }
  return app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) })
}
