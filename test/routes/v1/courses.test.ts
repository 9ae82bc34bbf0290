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
  const res = await app.inject({ method: 'POST', url: `/v1/courses/${courseId}/chapters/${chapterId}/lessons`, headers: owner.headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`lesson not created: ${res.body}`)
  return json(res)
}

t.test('GET /v1/courses/{courseId}: a COURSE post with its chapter count; ARTICLE, missing and others\' drafts are 404', async (t) => {
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
  t.equal((await app.inject({ method: 'GET', url: `/v1/courses/${course}`, headers: { 'if-none-match': res.headers.etag as string } })).statusCode, 304)
  for (const id of [article, randomUUID()]) {
    const r = await app.inject({ method: 'GET', url: `/v1/courses/${id}` })
    t.equal(r.statusCode, 404)
    t.equal(json(r).code, 'CourseNotFound')
  }
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${draft}`, headers: reader.headers })).code, 'CourseNotFound')
  t.equal((await app.inject({ method: 'GET', url: `/v1/courses/${draft}`, headers: owner.headers })).statusCode, 200, 'the creator sees their draft')
  t.equal((await app.inject({ method: 'GET', url: '/v1/courses/nope' })).statusCode, 422)
})

t.test('POST /v1/courses/{courseId}/chapters: course owner only; appended or inserted at a position', async (t) => {
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
  t.equal(json(await app.inject({ method: 'POST', url: `/v1/courses/${article}/chapters`, headers: owner.headers, payload: { title: 'x' } })).code, 'CourseNotFound')
  for (const payload of [{}, { title: '' }, { title: 'x', position: 0 }, { title: 'x', position: 1.5 }, { title: 'x', position: 2 ** 53 }, { title: 'x', position: 1e308 }, { title: 'x', course_id: course }]) {
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
  t.same(list.chapters.map((c: any) => [c.title, c.position]), [['First', 1], ['A', 2], ['B', 3], ['C', 4], ['Z', 5]])
  t.equal(list.total, 5)
})

t.test('POST /v1/courses/{courseId}/chapters honours Idempotency-Key', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  await checkReplay(t, app, `/v1/courses/${course}/chapters`, owner, { title: 'A' })
})

t.test('GET /v1/courses/{courseId}/chapters: position order, sort, paging, 404s', async (t) => {
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
  t.same(json(paged).chapters.map((c: any) => c.title), ['c'])
  t.equal(json(paged).total, 3)
  t.match(paged.headers.link, /rel="next"/)
  for (const q of ['sort=body', 'limit=0', 'position=1']) t.equal((await app.inject({ method: 'GET', url: `${url}?${q}` })).statusCode, 422, q)
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${randomUUID()}/chapters` })).code, 'CourseNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/courses/${draft}/chapters` })).code, 'CourseNotFound')
})

t.test('GET /v1/chapters/{chapterId}: one chapter, ETag, 404 when missing or its course is hidden', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const chapter = await addChapter(app, owner, course, { title: 'A' })
  const hidden = await addChapter(app, owner, draft, { title: 'H' })
  const res = await app.inject({ method: 'GET', url: `/v1/chapters/${chapter.id}` })
  t.equal(res.statusCode, 200)
  t.same(json(res), chapter)
  t.equal((await app.inject({ method: 'GET', url: `/v1/chapters/${chapter.id}`, headers: { 'if-none-match': res.headers.etag as string } })).statusCode, 304)
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/chapters/${randomUUID()}` })).code, 'ChapterNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/chapters/${hidden.id}` })).code, 'ChapterNotFound')
  t.equal((await app.inject({ method: 'GET', url: `/v1/chapters/${hidden.id}`, headers: owner.headers })).statusCode, 200)
})

t.test('POST /v1/courses/{courseId}/chapters/{chapterId}/lessons: owner only, positions, wrong course 404', async (t) => {
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
  const wrong = await app.inject({ method: 'POST', url: `/v1/courses/${otherCourse}/chapters/${chapter.id}/lessons`, headers: owner.headers, payload: { title: 'x' } })
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
  t.same(list.lessons.map((l: any) => [l.title, l.position]), [['L1', 1], ['L2', 2], ['L3', 3]])
})

t.test('POST lessons honours Idempotency-Key', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const chapter = await addChapter(app, owner, course, { title: 'A' })
  await checkReplay(t, app, `/v1/courses/${course}/chapters/${chapter.id}/lessons`, owner, { title: 'L' })
})

t.test('GET lessons: chapter under another course is 404; sort and paging; GET /v1/lessons/{lessonId}', async (t) => {
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
  t.equal((await app.inject({ method: 'GET', url: `/v1/lessons/${lesson.id}`, headers: { 'if-none-match': one.headers.etag as string } })).statusCode, 304)
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/lessons/${hiddenLesson.id}` })).code, 'LessonNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/lessons/${randomUUID()}` })).code, 'LessonNotFound')
})
