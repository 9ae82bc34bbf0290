/**
 * A unique-constraint failure, read the same on both databases: the text that names what was
 * taken (PostgreSQL's constraint name, SQLite's message naming the columns), or undefined when
 * the error is something else. The domain turns it into its own 409.
 */
export function uniqueViolation (err: unknown): string | undefined {
  const e = err as { code?: string, constraint?: string, message?: string }
  if (e.code === '23505') return String(e.constraint)
  if (e.code === 'SQLITE_CONSTRAINT_UNIQUE' || e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return String(e.message)
  return undefined
}

/**
 * A foreign-key failure, read the same on both databases: what PostgreSQL or SQLite names, or
 * undefined when the error is something else. A row written under a parent that went meanwhile.
 */
export function foreignKeyViolation (err: unknown): string | undefined {
  const e = err as { code?: string, constraint?: string, message?: string }
  if (e.code === '23503') return String(e.constraint)
  if (e.code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return String(e.message)
  return undefined
}

/**
 * The write, its foreign-key failure (a parent gone while it ran) answered with `refusal`'s
 * error, as a missing parent is answered, not a 500; other failures pass as they are.
 */
export async function whenParentGone<T> (write: Promise<T>, refusal: (err: unknown) => unknown): Promise<T> {
  try {
    return await write
  } catch (err) {
    if (foreignKeyViolation(err) === undefined) throw err
    throw await refusal(err)
  }
}
