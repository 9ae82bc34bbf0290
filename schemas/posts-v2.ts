import { Type, type Static } from './typebox.js'
import { PageQuery, ref, Nullable } from './common.js'
import { Post, PostListQuery } from './posts.js'

/** GET /v2/posts: keyset paging by an opaque cursor, the v1 filters. */
export const PostCursorQuery = Type.Object({
  limit: PageQuery.limit,
  cursor: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 512,
    description: 'the next_cursor of the previous page, as given; absent for the first page',
    examples: ['eyJzb3J0X2F0IjoiMjAyNi0xMS0yMVQwOTozMDowMC4wMDBaIiwiaWQiOiI3ZjFkM2MxZSJ9.q3Jx0Yc6lFv2b9n1m2Yh8o0mJ3vQ2oZq7sH8wX5kT4E']
  })),
  type: PostListQuery.properties.type,
  tags: PostListQuery.properties.tags,
  creator_id: PostListQuery.properties.creator_id
}, { additionalProperties: false })
export type PostCursorQuery = Static<typeof PostCursorQuery>

export const PostCursorPage = Type.Object({
  posts: Type.Array(ref(Post)),
  total: Type.Integer({ minimum: 0, description: 'number of posts the filters match' }),
  next_cursor: Nullable(Type.String(), { description: 'pass as `cursor` for the next page; null on the last page' })
}, { $id: 'PostCursorPage', title: 'PostCursorPage', additionalProperties: false })
export type PostCursorPage = Static<typeof PostCursorPage>
