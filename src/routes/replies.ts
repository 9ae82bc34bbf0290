import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Page } from '../db/paging.js'

/** The HTTP side of the API's conventions, shared by every route group: creation answers and list links. */

/** 201 with the new resource's `Location`. */
export function created<T> (reply: FastifyReply, location: string, resource: T): T {
  reply.code(201).header('location', location)
  return resource
}

/**
 * Sets the RFC 8288 `Link` header with `next`/`prev` (and `first`) where they exist, keeping
 * the request's other query parameters as they were.
 */
export function setPageLinks (request: FastifyRequest, reply: FastifyReply, page: Page, total: number): void {
  const [path, search = ''] = request.url.split('?')
  const links: string[] = []
  const at = (offset: number, rel: string) => {
    const params = new URLSearchParams(search)
    if (page.style === 'page') {
      // ceil: a prev link from beyond the end lands on the last page, not between pages
      params.set('page', String(Math.ceil(offset / page.limit) + 1))
      params.set('count', String(page.limit))
    } else {
      params.set('limit', String(page.limit))
      params.set('offset', String(offset))
    }
    links.push(`<${path}?${params.toString()}>; rel="${rel}"`)
  }
  if (page.offset + page.limit < total) at(page.offset + page.limit, 'next')
  if (page.offset > 0) at(Math.max(0, Math.min(page.offset - page.limit, total - page.limit > 0 ? total - page.limit : 0)), 'prev')
  if (page.offset > 0) at(0, 'first')
  if (links.length > 0) reply.header('link', links.join(', '))
}

/** The list envelope `{<plural>: items, total}` with its Link header set. */
export function listReply<K extends string, T> (request: FastifyRequest, reply: FastifyReply, plural: K, items: T[], total: number, page: Page) {
  setPageLinks(request, reply, page, total)
  return { [plural]: items, total } as { [P in K]: T[] } & { total: number }
}
