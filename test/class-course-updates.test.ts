import { randomUUID } from 'node:crypto'
import type { FastifyInstance, InjectOptions } from 'fastify'
import t from 'tap'
import { build, dialect, json, recordStatements } from './helper.js'
import { createCreator, type TestUser } from './fixtures.js'
import { insertPost, MISSING } from './post-fixtures.js'
import { revokeCreator } from '../src/domain/users.js'
import { PATCH, refusedWritingNothing, state } from './update-checks.js'
import { sql } from '../src/db/kysely.js'

/**
 * Updates of classes, students, chapters and lessons read the row, check it and write it only
 * where the row is still as read (a chapter's or a lesson's move under its parent's lock): every
 * refusal answers its problem and writes nothing, twins with one If-Match get one 200 and the rest
 * 412, and concurrent merge patches of different fields each land on the row the others left.
 */

const TWINS = 12

async function post (app: FastifyInstance, owner: TestUser, url: string, payload: object) {
  const res = await app.inject({ method: 'POST', url, headers: owner.headers, payload })
  if (res.statusCode !== 201) throw new Error(`POST ${url}: ${res.statusCode} ${res.body}`)
  return json(res)
}

/** A course of `owner` with three chapters and, in the first, three lessons. */
async function courseWithChapters (app: FastifyInstance, owner: TestUser, fields: { published_at?: string | null } = {}) {
  const course = await insertPost(app, owner.id, { type: 'COURSE', ...fields })
  const chapters = []
  for (const title of ['One', 'Two', 'Three']) chapters.push(await post(app, owner, `/v1/courses/${course}/chapters`, { title }))
  const lessons = []
  for (const title of ['a', 'b', 'c']) {
    lessons.push(await post(app, owner, `/v1/courses/${course}/chapters/${chapters[0].id}/lessons`, { title, body: `body ${title}` }))
  }
  const chapterList = `/v1/courses/${course}/chapters`
  const lessonList = `/v1/courses/${course}/chapters/${chapters[0].id}/lessons`
  return { course, chapters, lessons, chapterList, lessonList }
}

t.test('a class update refused for any reason writes nothing', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const article = await insertPost(app, owner.id)
  const othersCourse = await insertPost(app, other.id, { type: 'COURSE' })
  const othersDraft = await insertPost(app, other.id, { type: 'COURSE', published_at: null })
  const cls = await post(app, owner, '/v1/classes', { name: 'Evening', course_id: course, starts_date: '2026-12-01' })
  const url = `/v1/classes/${cls.id}`
  const put = { name: 'Changed', course_id: course }
  const stale = { ...owner.headers, 'if-match': '"stale"' }
  const patch = (headers: Record<string, string>, payload: object): InjectOptions => ({ method: 'PATCH', url, headers: { ...headers, ...PATCH }, payload })
  const cases: Array<[string, InjectOptions, [number, string]]> = [
    ['PUT by another creator', { method: 'PUT', url, headers: other.headers, payload: put }, [403, 'UserNotOwner']],
    ['PATCH by another creator', patch(other.headers, { name: 'x' }), [403, 'UserNotOwner']],
    ['PUT by another creator with a stale If-Match: the owner first',
      { method: 'PUT', url, headers: { ...other.headers, 'if-match': '"stale"' }, payload: put }, [403, 'UserNotOwner']],
    ['PUT with a stale If-Match', { method: 'PUT', url, headers: stale, payload: put }, [412, 'PreconditionFailed']],
    ['PATCH with a stale If-Match', patch(stale, { name: 'x' }), [412, 'PreconditionFailed']],
    ['PATCH with a stale If-Match to an article: If-Match first', patch(stale, { course_id: article }), [412, 'PreconditionFailed']],
    ['PATCH clearing the name', patch(owner.headers, { name: null }), [422, 'ValidationFailed']],
    ['PUT tied to an article', { method: 'PUT', url, headers: owner.headers, payload: { name: 'x', course_id: article } }, [422, 'ValidationFailed']],
    ['PATCH tied to a missing course', patch(owner.headers, { course_id: MISSING }), [422, 'ValidationFailed']],
    ["PATCH tied to another creator's draft course", patch(owner.headers, { course_id: othersDraft }), [422, 'ValidationFailed']],
    ["PATCH tied to another creator's course", patch(owner.headers, { course_id: othersCourse }), [403, 'UserNotOwner']],
    ["PUT tied to another creator's course", { method: 'PUT', url, headers: owner.headers, payload: { name: 'x', course_id: othersCourse } },
      [403, 'UserNotOwner']]
  ]
  for (const [name, request, expected] of cases) await refusedWritingNothing(t, app, [url], owner, request, expected, name)

  // the course the class keeps is judged as read with the class: no longer a course, a PATCH of the name alone is 422
  await app.db.updateTable('post').set({ type: 'ARTICLE' }).where('id', '=', course).execute()
  await refusedWritingNothing(t, app, [url], owner, patch(owner.headers, { name: 'x' }), [422, 'ValidationFailed'], 'its course now an article')
  await app.db.updateTable('post').set({ type: 'COURSE' }).where('id', '=', course).execute()

  // a stored value no rule allows any more: the merged class breaks the PUT rules (422) and nothing is written
  await app.db.updateTable('class').set({ name: '' }).where('id', '=', cls.id).execute()
  await refusedWritingNothing(t, app, [url], owner, patch(owner.headers, { starts_date: '2027-01-01' }), [422, 'ValidationFailed'],
    'a merge that breaks a rule')
  await app.db.updateTable('class').set({ name: 'Evening' }).where('id', '=', cls.id).execute()

  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const hidden = await post(app, owner, '/v1/classes', { name: 'Planned', course_id: draft })
  const hiddenUrl = `/v1/classes/${hidden.id}`
  await refusedWritingNothing(t, app, [hiddenUrl], owner, { method: 'PUT', url: hiddenUrl, headers: other.headers, payload: { name: 'x' } },
    [404, 'ClassNotFound'], "a class of another's draft course")
  const missing = await app.inject({ method: 'PUT', url: `/v1/classes/${MISSING}`, headers: owner.headers, payload: { name: 'x' } })
  t.same([missing.statusCode, json(missing).code], [404, 'ClassNotFound'], 'a missing class: 404')

  await revokeCreator(app.db, owner.username)
  await refusedWritingNothing(t, app, [url], owner, { method: 'PUT', url, headers: owner.headers, payload: put }, [403, 'UserNotCreator'], 'a revoked creator')
})

t.test('a class tied to a course is inserted from the course: a refused one writes nothing', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const article = await insertPost(app, owner.id)
  const othersCourse = await insertPost(app, other.id, { type: 'COURSE' })
  const othersDraft = await insertPost(app, other.id, { type: 'COURSE', published_at: null })
  const count = async () => Number((await app.db.selectFrom('class').select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
  const refusals: Array<[string, string, [number, string]]> = [
    ['an article', article, [422, 'ValidationFailed']],
    ['a missing course', randomUUID(), [422, 'ValidationFailed']],
    ["another creator's draft course", othersDraft, [422, 'ValidationFailed']],
    ["another creator's course", othersCourse, [403, 'UserNotOwner']]
  ]
  for (const [name, courseId, expected] of refusals) {
    const res = await app.inject({ method: 'POST', url: '/v1/classes', headers: owner.headers, payload: { name: 'x', course_id: courseId } })
    t.same([res.statusCode, json(res).code], expected, `${name}: ${expected.join(' ')}`)
    if (expected[0] === 422) t.match(json(res).errors, [{ in: 'body', field: '/course_id', rule: 'course' }], `${name}: the field named`)
    t.equal(await count(), 0, `${name}: no class written`)
  }
  for (const courseId of [course, draft]) {
    const payload = { name: 'x', course_id: courseId, starts_date: '2026-12-01' }
    const res = await app.inject({ method: 'POST', url: '/v1/classes', headers: owner.headers, payload })
    t.equal(res.statusCode, 201, 'the caller\'s own course, a draft too: 201')
    t.match(json(res), { course_id: courseId, starts_date: '2026-12-01', owner: { id: owner.id } })
  }
  t.equal(await count(), 2)
})

t.test('a class moved to a course deleted while the update is under way is 422, never a 500', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const url = `/v1/classes/${(await post(app, owner, '/v1/classes', { name: 'Class' })).id}`
  const before = await state(app, url, owner)
  // The delete holds the course's row until it commits: on PostgreSQL the update has checked the
  // course by then and waits on it in its foreign-key check; SQLite takes one writer at a time.
  const { pending } = await app.db.transaction().execute(async trx => {
    await trx.deleteFrom('post').where('id', '=', course).execute()
    const pending = app.inject({ method: 'PUT', url, headers: owner.headers, payload: { name: 'Moved', course_id: course } })
    while (dialect === 'postgres') {
      await new Promise(resolve => setTimeout(resolve, 20))
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and query like 'with "changed" as (update "class"%'`.execute(app.db)
      if (rows[0].n > 0) break
    }
    return { pending }
  })
  const res = await pending
  t.same([res.statusCode, json(res).code], [422, 'ValidationFailed'], 'refused as a missing course is')
  t.match(json(res).detail, `no course with id ${course}`)
  t.same(await state(app, url, owner), before, 'nothing written')
})

t.test('a student update refused for any reason writes nothing', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const cls = await post(app, owner, '/v1/classes', { name: 'Open' })
  const student = await post(app, owner, `/v1/classes/${cls.id}/students`, { first_name: 'Ann', last_name: 'B', sex: 'F', email: 'ann@example.com' })
  const url = `/v1/classes/${cls.id}/students/${student.id}`
  const put = { first_name: 'Changed', sex: 'X' }
  const stale = { ...owner.headers, 'if-match': '"stale"' }
  const cases: Array<[string, InjectOptions, [number, string]]> = [
    ['PUT by another creator', { method: 'PUT', url, headers: other.headers, payload: put }, [403, 'UserNotOwner']],
    ['PATCH by another creator', { method: 'PATCH', url, headers: { ...other.headers, ...PATCH }, payload: { first_name: 'x' } }, [403, 'UserNotOwner']],
    ['PUT with a stale If-Match', { method: 'PUT', url, headers: stale, payload: put }, [412, 'PreconditionFailed']],
    ['PATCH with a stale If-Match', { method: 'PATCH', url, headers: { ...stale, ...PATCH }, payload: { first_name: 'x' } }, [412, 'PreconditionFailed']],
    ['PATCH clearing the first name', { method: 'PATCH', url, headers: { ...owner.headers, ...PATCH }, payload: { first_name: null } },
      [422, 'ValidationFailed']]
  ]
  for (const [name, request, expected] of cases) await refusedWritingNothing(t, app, [url], owner, request, expected, name)

  // a stored value no rule allows any more: the merged student breaks the PUT rules (422) and nothing is written
  await app.db.updateTable('student').set({ email: 'not an address' }).where('id', '=', student.id).execute()
  await refusedWritingNothing(t, app, [url], owner, { method: 'PATCH', url, headers: { ...owner.headers, ...PATCH }, payload: { first_name: 'x' } },
    [422, 'ValidationFailed'], 'a merge that breaks a rule')
  await app.db.updateTable('student').set({ email: 'ann@example.com' }).where('id', '=', student.id).execute()

  const elsewhere = await post(app, owner, '/v1/classes', { name: 'Other' })
  await refusedWritingNothing(t, app, [url], owner,
    { method: 'PUT', url: `/v1/classes/${elsewhere.id}/students/${student.id}`, headers: owner.headers, payload: put },
    [404, 'StudentNotFound'], 'the student under another class')
  const missing = await app.inject({ method: 'PUT', url: `/v1/classes/${cls.id}/students/${MISSING}`, headers: owner.headers, payload: put })
  t.same([missing.statusCode, json(missing).code], [404, 'StudentNotFound'], 'a missing student: 404')
  const noClass = await app.inject({ method: 'PUT', url: `/v1/classes/${MISSING}/students/${student.id}`, headers: owner.headers, payload: put })
  t.same([noClass.statusCode, json(noClass).code], [404, 'ClassNotFound'], 'a missing class: its 404')

  const draft = await insertPost(app, owner.id, { type: 'COURSE', published_at: null })
  const hidden = await post(app, owner, '/v1/classes', { name: 'Planned', course_id: draft })
  const pupil = await post(app, owner, `/v1/classes/${hidden.id}/students`, { first_name: 'Pupil', sex: 'M' })
  const hiddenUrl = `/v1/classes/${hidden.id}/students/${pupil.id}`
  await refusedWritingNothing(t, app, [hiddenUrl], owner, { method: 'PUT', url: hiddenUrl, headers: other.headers, payload: put },
    [404, 'ClassNotFound'], "a student of a class of another's draft course")
  const missingHidden = await app.inject({ method: 'PUT', url: `/v1/classes/${hidden.id}/students/${MISSING}`, headers: other.headers, payload: put })
  t.same([missingHidden.statusCode, json(missingHidden).code], [404, 'ClassNotFound'], 'a missing student of a hidden class: the class\'s 404 first')

  await revokeCreator(app.db, owner.username)
  await refusedWritingNothing(t, app, [url], owner, { method: 'PUT', url, headers: owner.headers, payload: put }, [403, 'UserNotCreator'], 'a revoked creator')
})

t.test('a chapter or lesson update refused for any reason writes nothing, nor moves any other', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const { course, chapters, lessons, chapterList, lessonList } = await courseWithChapters(app, owner)
  const stale = { ...owner.headers, 'if-match': '"stale"' }
  const items = [['chapter', chapters[1], { title: 'New', position: 3 }], ['lesson', lessons[1], { title: 'New', body: null, position: 3 }]] as const
  for (const [kind, item, put] of items) {
    const url = `/v1/${kind}s/${item.id}`
    const watched = [url, chapterList, lessonList]
    const patch = (headers: Record<string, string>, payload: object): InjectOptions => ({ method: 'PATCH', url, headers: { ...headers, ...PATCH }, payload })
    const cases: Array<[string, InjectOptions, [number, string]]> = [
      ['PUT by another creator', { method: 'PUT', url, headers: other.headers, payload: put }, [403, 'UserNotOwner']],
      ['PATCH by another creator', patch(other.headers, { title: 'x' }), [403, 'UserNotOwner']],
      ['PUT with a stale If-Match', { method: 'PUT', url, headers: stale, payload: { ...put, position: item.position } }, [412, 'PreconditionFailed']],
      ['PUT moving it with a stale If-Match', { method: 'PUT', url, headers: stale, payload: put }, [412, 'PreconditionFailed']],
      ['PATCH moving it with a stale If-Match', patch(stale, { position: 1 }), [412, 'PreconditionFailed']],
      ['PATCH clearing the title', patch(owner.headers, { title: null }), [422, 'ValidationFailed']],
      ['PATCH moving it and clearing the title', patch(owner.headers, { title: null, position: 1 }), [422, 'ValidationFailed']]
    ]
    for (const [name, request, expected] of cases) await refusedWritingNothing(t, app, watched, owner, request, expected, `${kind}: ${name}`)

    const notFound = kind === 'chapter' ? 'ChapterNotFound' : 'LessonNotFound'
    // its course no longer a course: as missing as on GET
    await app.db.updateTable('post').set({ type: 'ARTICLE' }).where('id', '=', course).execute()
    const gone = await app.inject({ method: 'PUT', url, headers: owner.headers, payload: put })
    t.same([gone.statusCode, json(gone).code], [404, notFound], `${kind}: of a course now an article: 404`)
    await app.db.updateTable('post').set({ type: 'COURSE' }).where('id', '=', course).execute()
    await refusedWritingNothing(t, app, watched, owner, { method: 'PUT', url: `/v1/${kind}s/${MISSING}`, headers: owner.headers, payload: put },
      [404, notFound], `${kind}: a missing one`)
  }

  const draft = await courseWithChapters(app, owner, { published_at: null })
  for (const [kind, item] of [['chapter', draft.chapters[0]], ['lesson', draft.lessons[0]]] as const) {
    const url = `/v1/${kind}s/${item.id}`
    await refusedWritingNothing(t, app, [url, draft.chapterList, draft.lessonList], owner,
      { method: 'PATCH', url, headers: { ...other.headers, ...PATCH }, payload: { position: 2 } },
      [404, kind === 'chapter' ? 'ChapterNotFound' : 'LessonNotFound'], `${kind}: of another's draft course`)
  }

  await revokeCreator(app.db, owner.username)
  for (const [kind, item] of [['chapter', chapters[0]], ['lesson', lessons[0]]] as const) {
    const url = `/v1/${kind}s/${item.id}`
    await refusedWritingNothing(t, app, [url, chapterList, lessonList], owner,
      { method: 'PATCH', url, headers: { ...owner.headers, ...PATCH }, payload: { position: 2 } }, [403, 'UserNotCreator'], `${kind}: a revoked creator`)
  }
})

interface Target {
  name: string
  /** the URL of the item to change, and the list its moves would shift (if any) */
  create: (app: FastifyInstance, owner: TestUser) => Promise<{ url: string, list?: string }>
  body: (n: number) => object
}

// Twins that rename only: test/conditional-writes.test.ts, for every resource. Here a chapter's or
// lesson's twins also move it, so the unlocked rename and the locked move race.
const targets: Target[] = [
  {
    name: 'chapter',
    create: async (app, owner) => {
      const { chapters, chapterList } = await courseWithChapters(app, owner)
      return { url: `/v1/chapters/${chapters[1].id}`, list: chapterList }
    },
    // a third keep its place, the others move it up or down: the two paths race
    body: n => ({ title: `Twin ${n}`, position: 1 + (n % 3) })
  },
  {
    name: 'lesson',
    create: async (app, owner) => {
      const { lessons, lessonList } = await courseWithChapters(app, owner)
      return { url: `/v1/lessons/${lessons[1].id}`, list: lessonList }
    },
    body: n => ({ title: `Twin ${n}`, body: n % 2 === 0 ? null : `body ${n}`, position: 1 + (n % 3) })
  }
]

for (const target of targets) {
  for (const method of ['PUT', 'PATCH'] as const) {
    t.test(`${target.name}: ${TWINS} ${method} twins with one If-Match, one 200 and the rest 412, no 500`, async t => {
      const app = await build(t)
      const owner = await createCreator(app)
      const { url, list } = await target.create(app, owner)
      const read = await app.inject({ method: 'GET', url, headers: owner.headers })
      const headers = { ...owner.headers, 'if-match': String(read.headers.etag), ...(method === 'PATCH' ? PATCH : {}) }
      const answers = await Promise.all(Array.from({ length: TWINS }, (_, n) => app.inject({ method, url, headers, payload: target.body(n) })))
      const statuses = answers.map(a => a.statusCode)
      t.equal(statuses.filter(s => s === 200).length, 1, `one 200 (${statuses.join(' ')})`)
      t.equal(statuses.filter(s => s === 412).length, TWINS - 1, 'the rest 412')
      const winner = answers.find(a => a.statusCode === 200)!
      const now = await state(app, url, owner)
      t.same(now.body, json(winner), 'what is stored is the winner\'s write')
      if (list) {
        const items = json(await app.inject({ method: 'GET', url: list, headers: owner.headers }))[`${target.name}s`] as Array<{ position: number }>
        t.same(items.map(i => i.position), [1, 2, 3], 'the places stay 1..n, none taken twice')
      }
    })
  }
}

t.test('concurrent merge patches of different fields, without If-Match, all land', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const merge = (url: string, patches: object[]) =>
    Promise.all(patches.map(payload => app.inject({ method: 'PATCH', url, headers: { ...owner.headers, ...PATCH }, payload })))
  for (let round = 1; round <= 4; round++) {
    const course = await insertPost(app, owner.id, { type: 'COURSE' })
    const cls = await post(app, owner, '/v1/classes', { name: 'Class' })
    const classUrl = `/v1/classes/${cls.id}`
    const classPatches = [{ name: `Name ${round}` }, { starts_date: '2027-01-0' + round }, { course_id: course }]
    t.same((await merge(classUrl, classPatches)).map(a => a.statusCode), [200, 200, 200], `round ${round}: every class PATCH 200`)
    t.match((await state(app, classUrl, owner)).body, { name: `Name ${round}`, starts_date: `2027-01-0${round}`, course_id: course },
      `round ${round}: every class field changed`)

    const student = await post(app, owner, `/v1/classes/${cls.id}/students`, { first_name: 'Ann', sex: 'F' })
    const studentUrl = `${classUrl}/students/${student.id}`
    const studentPatches = [{ first_name: `F${round}` }, { last_name: `L${round}` }, { sex: 'X' }, { email: `s${round}@example.com` }]
    t.same((await merge(studentUrl, studentPatches)).map(a => a.statusCode), [200, 200, 200, 200], `round ${round}: every student PATCH 200`)
    t.match((await state(app, studentUrl, owner)).body, { first_name: `F${round}`, last_name: `L${round}`, sex: 'X', email: `s${round}@example.com` },
      `round ${round}: every student field changed`)

    // a rename and a move of one chapter, with moves and renames of its siblings: every field lands, the places stay 1..n
    const { chapters, lessons, chapterList, lessonList } = await courseWithChapters(app, owner)
    const [one, two, three] = chapters.map(c => `/v1/chapters/${c.id}`)
    const chapterAnswers = await Promise.all([
      merge(two, [{ title: `Two ${round}` }, { position: 1 }]),
      merge(three, [{ title: `Three ${round}` }]),
      merge(one, [{ title: `One ${round}` }])
    ])
    t.same(chapterAnswers.flat().map(a => a.statusCode), [200, 200, 200, 200], `round ${round}: every chapter PATCH 200`)
    const chapterItems = json(await app.inject({ method: 'GET', url: chapterList, headers: owner.headers })).chapters
    t.same(chapterItems.map((c: { title: string }) => c.title), [`Two ${round}`, `One ${round}`, `Three ${round}`], `round ${round}: every chapter field changed`)
    t.same(chapterItems.map((c: { position: number }) => c.position), [1, 2, 3], `round ${round}: the chapters' places stay 1..n`)

    const lessonUrl = `/v1/lessons/${lessons[0].id}`
    const lessonAnswers = await Promise.all([
      merge(lessonUrl, [{ title: `Title ${round}` }, { body: null }, { position: 3 }]),
      merge(`/v1/lessons/${lessons[2].id}`, [{ position: 1 }, { title: `Last ${round}` }])
    ])
    t.same(lessonAnswers.flat().map(a => a.statusCode), [200, 200, 200, 200, 200], `round ${round}: every lesson PATCH 200`)
    t.match((await state(app, lessonUrl, owner)).body, { title: `Title ${round}`, body: null }, `round ${round}: every lesson field changed`)
    const lessonItems = json(await app.inject({ method: 'GET', url: lessonList, headers: owner.headers })).lessons
    t.same(lessonItems.map((l: { position: number }) => l.position), [1, 2, 3], `round ${round}: the lessons' places stay 1..n`)
    t.same(lessonItems.map((l: { title: string }) => l.title).sort(), [`Last ${round}`, `Title ${round}`, 'b'].sort(), `round ${round}: no lesson lost`)
  }
})

t.test('an update is the account read, the read and one write; a move alone takes its parent\'s lock', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const course = await insertPost(app, owner.id, { type: 'COURSE' })
  const another = await insertPost(app, owner.id, { type: 'COURSE' })
  const cls = await post(app, owner, '/v1/classes', { name: 'Class', course_id: course })
  const student = await post(app, owner, `/v1/classes/${cls.id}/students`, { first_name: 'Ann', sex: 'F' })
  const { chapters, lessons } = await courseWithChapters(app, owner)
  const statements = recordStatements(t, app)
  const merge = { ...owner.headers, ...PATCH }
  const classUrl = `/v1/classes/${cls.id}`
  // [name, request, statements on PostgreSQL, the writing statement's verb]
  const requests: Array<[string, InjectOptions, number, string]> = [
    ['POST class tied to a course', { method: 'POST', url: '/v1/classes', headers: owner.headers, payload: { name: 'New', course_id: course } }, 2, 'with'],
    ['PUT class keeping its course', { method: 'PUT', url: classUrl, headers: owner.headers, payload: { name: 'New', course_id: course } }, 3, 'with'],
    ['PATCH class', { method: 'PATCH', url: classUrl, headers: merge, payload: { starts_date: '2027-01-01' } }, 3, 'with'],
    // another course is read on its own
    ['PUT class to another course', { method: 'PUT', url: classUrl, headers: owner.headers, payload: { name: 'New', course_id: another } }, 4, 'with'],
    ['PUT class without a course', { method: 'PUT', url: classUrl, headers: owner.headers, payload: { name: 'New' } }, 3, 'with'],
    ['PUT student', { method: 'PUT', url: `${classUrl}/students/${student.id}`, headers: owner.headers, payload: { first_name: 'B', sex: 'M' } }, 3, 'update'],
    ['PATCH student', { method: 'PATCH', url: `${classUrl}/students/${student.id}`, headers: merge, payload: { email: null } }, 3, 'update'],
    ['PUT chapter in its place', { method: 'PUT', url: `/v1/chapters/${chapters[0].id}`, headers: owner.headers, payload: { title: 'T', position: 1 } }, 3, 'update'],
    ['PATCH chapter title', { method: 'PATCH', url: `/v1/chapters/${chapters[0].id}`, headers: merge, payload: { title: 'U' } }, 3, 'update'],
    ['PUT lesson in its place', { method: 'PUT', url: `/v1/lessons/${lessons[0].id}`, headers: owner.headers, payload: { title: 'T' } }, 3, 'update'],
    ['PATCH lesson body', { method: 'PATCH', url: `/v1/lessons/${lessons[0].id}`, headers: merge, payload: { body: 'new' } }, 3, 'update']
  ]
  for (const [name, request, count, verb] of requests) {
    statements.length = 0
    const res = await app.inject(request)
    t.equal(res.statusCode, request.method === 'POST' ? 201 : 200, name)
    const verbs = statements.map(sql => sql.split(' ')[0].toLowerCase())
    if (dialect === 'postgres') {
      t.same(verbs, [...Array(count - 1).fill('select'), verb], `${name}: ${count} statements, the last the write`)
    } else {
      t.ok(verbs.includes('begin') && verbs.at(-1) === 'commit', `${name}: SQLite reads and writes in one transaction`)
    }
  }

  for (const [name, url, payload] of [
    ['PATCH chapter moving it', `/v1/chapters/${chapters[0].id}`, { position: 3 }],
    ['PATCH lesson moving it', `/v1/lessons/${lessons[0].id}`, { position: 3 }]
  ] as const) {
    statements.length = 0
    t.equal((await app.inject({ method: 'PATCH', url, headers: merge, payload })).statusCode, 200, name)
    const verbs = statements.map(sql => sql.split(' ')[0].toLowerCase())
    t.equal(verbs.at(-1), 'commit', `${name}: in a transaction`)
    if (dialect === 'postgres') {
      const locks = statements.filter(sql => sql.endsWith('for update'))
      const [parent, item] = name.startsWith('PATCH chapter') ? ['post', 'chapter'] : ['chapter', 'lesson']
      t.match(locks, [new RegExp(`^select "${parent}"\\."id" from "${parent}"`), new RegExp(`^select "${item}"\\."id" from "${item}"`)],
        `${name}: the parent's row locked, then the item's`)
    }
  }
})
