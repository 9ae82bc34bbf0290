import type { Kysely } from 'kysely'

/**
 * Uploads sniffed before active content was served as text (an SVG or XHTML file starting
 * `<?xml` was application/xml, a Flash file application/x-shockwave-flash) become text/plain,
 * the type every new upload of such bytes gets, so no stored file is served as a runnable type.
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.updateTable('media').set({ content_type: 'text/plain' })
    .where('content_type', 'in', ['application/xml', 'application/x-shockwave-flash']).execute()
}

// The sniffed types are not kept elsewhere; text/plain stays (the safe type either way).
export async function down (): Promise<void> {}
