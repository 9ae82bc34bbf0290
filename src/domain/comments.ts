import { randomUUID } from 'node:crypto'
import { cachedRowStatement, cachedStatement, cachedStatementPerShape } from '../db/statement-cache.js'
import type { SelectQueryBuilder } from '../db/kysely.js'
import type { CommentTable, Database } from '../db/schema.js'
import { changeRow, rowVersion, sameVersion } from '../db/row-change.js'
import { writeTogether } from '../db/write-together.js'
import { AppError } from '../../schemas/problems.js'
import type { Comment, CommentListQuery, CommentWrite } from '../../schemas/comments.js'
import { lockForUpdate } from '../db/row-lock.js'
import { formatDateTime } from '../db/date-time-format.js'
import { writeTimeIso } from '../db/clock.js'
import { alertPostCreator, alertingValues, alertingWrite, type AlertingValues } from './alerts.js'
import { compiledList } from '../db/paging.js'
import { parseSort } from './list.js'
import type { Executor } from '../db/dialect.js'
import { assertPostVisible, isVisible, orPostGone, postNotFound } from './posts.js'
import { PERSON_COLUMNS, toPerson } from './person.js'
import { bodyOf, type Change } from './merge-patch.js'

/** Runs against the comment as it is, before anything changes: the route's owner and If-Match checks. */
export type CommentGuard = (current: Comment) => void

const SORT_COLUMNS = { created_at: 'comment.created_at', updated_at: 'comment.updated_at' }
const DEFAULT_SORT = [{ column: 'comment.created_at', direction: 'asc' as const }]

function selectComments (db: Executor, postId: string) {
  return withAuthor(db.selectFrom('comment')).where('comment.post_id', '=', postId)
}

/** A comment's columns and its author's, from `comment` (the table, or a CTE of its rows named so). */
function withAuthor<Q extends SelectQueryBuilder<Database & { comment: CommentTable }, 'comment', {}>> (from: Q) {
  return (from as unknown as SelectQueryBuilder<Database, 'comment', {}>)
    .innerJoin('user', 'user.id', 'comment.author_id')
    .innerJoin('profile', 'profile.id', 'comment.author_id')
    .select(['comment.id', 'comment.post_id', 'comment.author_id', 'comment.text', 'comment.created_at', 'comment.updated_at', ...PERSON_COLUMNS])
}

type CommentRow = Awaited<ReturnType<ReturnType<typeof selectComments>['executeTakeFirstOrThrow']>>

function toComment (row: CommentRow): Comment {
  return {
    id: row.id,
    post_id: row.post_id,
    author: toPerson(row.author_id, row),
    text: row.text,
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

const commentList = compiledList((db, v: { postId: string }) => selectComments(db, v.postId))

/** The comments of a post the viewer can see (404 PostNotFound otherwise), oldest first by default. */
export async function listComments (db: Executor, postId: string, viewerId: string | undefined, query: CommentListQuery) {
  await assertPostVisible(db, postId, viewerId)
  const sort = parseSort(query.sort, SORT_COLUMNS, DEFAULT_SORT, 'comment.id')
  const { rows, total } = await commentList.page(db, { postId }, sort, query)
  return { items: rows.map(toComment), total }
}

const commentOnPost = cachedRowStatement((db, postId: string, commentId: string) => selectComments(db, postId).where('comment.id', '=', commentId))

/** One comment; a comment under another post is 404 like a missing one. */
export async function getComment (db: Executor, postId: string, commentId: string, viewerId: string | undefined): Promise<Comment> {
  await assertPostVisible(db, postId, viewerId)
  const row = await commentOnPost(db, postId, commentId)
  if (!row) throw new AppError('ResourceNotFound', `no comment ${commentId} on post ${postId}`)
  return toComment(row)
}

/**
 * A new comment on a post the author can see (404 PostNotFound otherwise, nothing written); the
 * post's creator is alerted in the same write (writeTogether: one statement on PostgreSQL).
 */
export async function createComment (db: Executor, postId: string, authorId: string, input: CommentWrite): Promise<Comment> {
  const id = randomUUID()
  const now = writeTimeIso()
  const row = await orPostGone(postId, writeTogether(
    db,
    async db => (await insertCommentReturning(db, undefined, { ...alertingValues(postId, authorId, 'comment'), id, text: input.text, createdAt: now }))[0],
    async trx => {
      await assertPostVisible(trx, postId, authorId)
      await insertComment(trx, id, postId, authorId, input.text, now)
      await alertPostCreator(trx, alertingValues(postId, authorId, 'comment'))
      return commentOnPost(trx, postId, id)
    }
  ))
  if (!row) throw postNotFound(postId)
  return toComment(row)
}

const insertComment = cachedStatement((db, id: string, postId: string, authorId: string, text: string, at: string) =>
  db.insertInto('comment').values({ id, post_id: postId, author_id: authorId, text, created_at: at, updated_at: at }))

/**
 * The create in one statement (writeTogether's): the comment inserted from the visible post
 * (none: no row, so nothing is written), beside its creator's alert, read back with its author.
 */
const insertCommentReturning = cachedStatementPerShape((db, _: undefined, v: AlertingValues & { id: string, text: string, createdAt: string }) =>
  withAuthor(
    alertingWrite(db, v)
      .with('new_comment', q => q.insertInto('comment')
        .columns(['id', 'post_id', 'author_id', 'text', 'created_at', 'updated_at'])
        .expression(eb => eb.selectFrom('parent').select(eb => [
          eb.val(v.id).as('id'),
          'parent.id as post_id',
          eb.val(v.actorId).as('author_id'),
          eb.val(v.text).as('text'),
          eb.val(v.createdAt).as('created_at'),
          eb.val(v.createdAt).as('updated_at')
        ]))
        .returningAll())
      .selectFrom('new_comment as comment')
  )
)

/** PUT and PATCH: replaces the text. The guard and the merge judge the comment as it is written (changeRow). */
export async function updateComment (
  db: Executor,
  postId: string,
  commentId: string,
  viewerId: string,
  change: Change<Comment, CommentWrite>,
  guard: CommentGuard
): Promise<Comment> {
  return changeRow(db, {
    lock: db => db.selectFrom('comment').select('id').where('id', '=', commentId),
    read: async db => {
      const row = await commentToChange(db, postId, commentId)
      if (!row || !isVisible(row, viewerId)) {
        // the answer getComment gives: 404 PostNotFound for a post the viewer cannot see, before the comment's own 404
        await assertPostVisible(db, postId, viewerId)
        throw new AppError('ResourceNotFound', `no comment ${commentId} on post ${postId}`)
      }
      const current = toComment(row)
      guard(current)
      return { version: row.version, text: bodyOf(change, current).text, updated_at: writeTimeIso() }
    },
    statement: async (db, { version, text, updated_at: updatedAt }) => {
      const [row] = await updateCommentReturning(db, undefined, { id: commentId, postId, version: version!, text, updatedAt })
      return row && toComment(row)
    },
    steps: async (trx, { text, updated_at: updatedAt }) => {
      await trx.updateTable('comment').set({ text, updated_at: updatedAt }).where('id', '=', commentId).execute()
      return toComment((await commentOnPost(trx, postId, commentId))!)
    }
  })
}

/** The comment a change reads, as getComment reads it, with its post's visibility and the row's version (changeRow), in one read. */
const commentToChange = cachedRowStatement((db, postId: string, commentId: string) =>
  selectComments(db, postId).innerJoin('post', 'post.id', 'comment.post_id')
    .select(['post.published_at', 'post.creator_id', rowVersion(db, 'comment').as('version')]).where('comment.id', '=', commentId))

/** The update in one statement (changeRow's), where the comment still has the version read, read back with its author. */
type CommentChange = { id: string, postId: string, version: string, text: string, updatedAt: string }
const updateCommentReturning = cachedStatementPerShape((db, _: undefined, v: CommentChange) =>
  withAuthor(
    db.with('changed', q => q.updateTable('comment').set({ text: v.text, updated_at: v.updatedAt })
      .where('comment.id', '=', v.id).where('comment.post_id', '=', v.postId).where(sameVersion('comment', v.version)).returningAll())
      .selectFrom('changed as comment')
  ))

/** The PUT body that keeps a comment as it is: what a PATCH merges into. */
export function commentFields (comment: Comment): CommentWrite {
  return { text: comment.text }
}

export async function deleteComment (db: Executor, postId: string, commentId: string, viewerId: string, guard: CommentGuard): Promise<void> {
  await db.transaction().execute(async trx => {
    guard(await lockComment(trx, postId, commentId, viewerId))
    await trx.deleteFrom('comment').where('id', '=', commentId).execute()
  })
}

/** The comment to change, locked until the transaction ends. */
async function lockComment (trx: Executor, postId: string, commentId: string, viewerId: string): Promise<Comment> {
  await lockForUpdate(trx, trx.selectFrom('comment').select('id').where('id', '=', commentId))
  return getComment(trx, postId, commentId, viewerId)
}
