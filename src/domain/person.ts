/**
 * One way to embed a person (a post's creator, a comment's author, a shop's owner): the query
 * joins `user` and `profile` on the person's id and selects PERSON_COLUMNS; toPerson shapes them.
 */
export const PERSON_COLUMNS = ['user.username', 'profile.first_name', 'profile.last_name'] as const

export interface PersonRow { username: string, first_name: string, last_name: string | null }

/** What the API shows of a person: `{id, username, first_name, last_name}`. */
export function toPerson (id: string, row: PersonRow) {
  return { id, username: row.username, first_name: row.first_name, last_name: row.last_name }
}
