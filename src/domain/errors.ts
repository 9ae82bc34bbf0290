import { AppError, type ProblemCode } from '../../schemas/problems.js'

/** Awaits a single-row query and throws the resource's not-found code when it found nothing. */
export async function orNotFound<T> (row: Promise<T | undefined>, code: ProblemCode, detail: string): Promise<T> {
  const value = await row
  if (value === undefined) throw new AppError(code, detail)
  return value
}
