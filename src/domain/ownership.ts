import { AppError } from '../../schemas/problems.js'

/** The ownership rule: only the owner may act on a resource (403 UserNotOwner otherwise). */
export function assertOwner (callerId: string, ownerId: string): void {
  if (callerId !== ownerId) throw new AppError('UserNotOwner', 'this resource belongs to another user')
}
