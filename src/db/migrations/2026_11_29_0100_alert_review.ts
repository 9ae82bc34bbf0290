import { sql, type Kysely } from '../kysely.js'

/**
 * alert.review_id: the review an alert of kind `review` tells of, so that withdrawing the review
 * (DELETE /v1/posts/{postId}/reviews/{reviewId}) takes its alert with it (ON DELETE CASCADE),
 * and so does deleting the post, whose reviews go. Existing review alerts are matched to their
 * review by the post and the reviewer's username that starts their message
 * (`<username> left a review on your post "…"`; one review per user and post makes it unique).
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('alert').addColumn('review_id', 'text', c => c.references('review.id').onDelete('cascade')).execute()
  await db.schema.createIndex('alert_review_idx').on('alert').column('review_id').execute()
  await sql`
    update alert set review_id = (
      select r.id from review r join "user" u on u.id = r.author_id
      where r.post_id = alert.post_id
        and substr(alert.message, 1, length(u.username) + 17) = u.username || ' left a review on'
    )
    where kind = 'review' and post_id is not null`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('alert_review_idx').execute()
  await db.schema.alterTable('alert').dropColumn('review_id').execute()
}
