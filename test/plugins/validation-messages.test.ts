import t from 'tap'
import { describePattern, validationMessage } from '../../plugins/validation-messages.js'
import { BANDS } from '../../schemas/profiles.js'
import { createCreator } from '../fixtures.js'
import { build, json } from '../helper.js'

const signUp = { username: 'ada', email: 'ada@example.com', password: 'correct horse battery staple', first_name: 'Ada' }

t.test('sign-up failures read as sentences; field, rule and in stay as they were', async t => {
  const app = await build(t)
  const res = await app.inject({
    method: 'POST',
    url: '/v1/profiles',
    payload: { ...signUp, username: 'ada lovelace!', age: 'old', favorite_band: 'The Monkees', first_name: '', password: 'short' }
  })
  t.equal(res.statusCode, 422)
  const errors = json(res).errors as Array<{ in: string; field: string; rule: string; message: string }>
  const by = (field: string) => errors.find(e => e.field === field)
  t.same(by('/username'), {
    in: 'body',
    field: '/username',
    rule: 'pattern',
    message: "must be one or more letters, digits, '_' or '-' " + '(spaces around it are ignored)'
  })
  t.same(by('/age'), { in: 'body', field: '/age', rule: 'type', message: 'must be an integer or null' })
  t.same(by('/favorite_band'), { in: 'body', field: '/favorite_band', rule: 'enum', message: `must be one of: ${BANDS.join(', ')}, null` })
  t.same(by('/first_name'), { in: 'body', field: '/first_name', rule: 'minLength', message: 'must not be empty' })
  t.same(by('/password'), { in: 'body', field: '/password', rule: 'minLength', message: 'must be at least 12 characters long' })
  for (const e of errors) { t.notMatch(e.message, /must match pattern|must NOT|must be equal to one of|integer,null/, `${e.field}: no raw validator text`) }
  t.match(json(res).detail, /\/age: must be an integer or null/, 'detail lists the same sentences')
})

t.test('query, path and list rules in words', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const cases: Array<[string, string, string, string]> = [
    ['/v1/posts?limit=500', '/limit', 'maximum', 'must be 100 or less'],
    [
      '/v1/posts?sort=rating',
      '/sort',
      'pattern',
      'must be fields among created_at, updated_at, published_at, title, comma-separated, ' + 'each at most once (a leading - sorts descending)'
    ],
    [
      '/v1/posts?tags=a%20b',
      '/tags',
      'pattern',
      'must be a comma list of up to 10 items, each a letter or digit followed by up to 31 ' + "letters, digits, '_' or '-'"
    ],
    ['/v1/posts?type=VIDEO', '/type', 'enum', 'must be one of: ARTICLE, COURSE'],
    ['/v1/alerts?kind=mention', '/kind', 'anyOf', 'must be one of: review, comment'],
    ['/v1/posts/not-a-uuid', '/postId', 'format', 'must be a UUID such as 7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'],
    ['/v1/shops/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10/products?currency=eur', '/currency', 'pattern', 'must be 3 upper-case letters']
  ]
  for (const [url, field, rule, message] of cases) {
    const res = await app.inject({ method: 'GET', url, headers: creator.headers })
    t.equal(res.statusCode, 422, url)
    const errors = json(res).errors as Array<{ field: string; rule: string; message: string }>
    const issue = errors.find(e => e.field === field && e.rule === rule)
    t.equal(issue?.message, message, `${url}: ${field} ${rule}`)
    if (rule === 'anyOf') t.equal(errors.filter(e => e.field === field).length, 1, `${url}: one issue for ${field}, not one per allowed form`)
  }
  const post = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: creator.headers,
    payload: { type: 'ARTICLE', title: 'x', slug: 'Not A Slug', tags: ['ok', 'no spaces'] }
  })
  const errors = json(post).errors as Array<{ field: string; message: string }>
  t.equal(
    errors.find(e => e.field === '/slug')?.message,
    "must be one or more lower-case letters or digits, then any number of times ('-' followed by one or more lower-case letters or digits)"
  )
  t.equal(errors.find(e => e.field === '/tags/1')?.message, "must be a letter or digit, then any number of letters, digits, '_' or '-'")
})

t.test('every rule keyword has words of its own', async t => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['required', { missingProperty: 'x' }, 'is required'],
    ['additionalProperties', { additionalProperty: 'x' }, 'is not a known property'],
    ['const', { allowedValue: 'password' }, 'must be password'],
    ['type', { type: 'string' }, 'must be a string'],
    ['type', { type: ['integer', 'null'] }, 'must be an integer or null'],
    ['maxLength', { limit: 1 }, 'must be at most 1 character long'],
    ['minimum', { limit: 18, comparison: '>=' }, 'must be 18 or more'],
    ['exclusiveMaximum', { limit: 5 }, 'must be less than 5'],
    ['minItems', { limit: 2 }, 'must have at least 2 items'],
    ['maxItems', { limit: 10 }, 'must have at most 10 items'],
    ['uniqueItems', { i: 3, j: 1 }, 'must not repeat a value (items 1 and 3 are the same)'],
    ['format', { format: 'email' }, 'must be an e-mail address such as ada@example.com'],
    ['format', { format: 'media-url' }, 'files are to be uploaded only to internal services'],
    ['format', { format: 'date' }, 'must be a calendar date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31, such as 2026-12-01'],
    ['anyOf', {}, 'must match one of the allowed forms']
  ]
  for (const [keyword, params, message] of cases) t.equal(validationMessage({ keyword, params }), message, `${keyword} ${JSON.stringify(params)}`)
  t.equal(describePattern('^https?://'), "must start with 'http', then optionally 's', then '://'")
  t.equal(describePattern('^[0-9a-f]{64}$'), 'must be 64 lower-case hexadecimal digits')
  t.equal(describePattern('^[^x]+$'), 'must match the pattern ^[^x]+$', 'an unsupported construct is quoted, not misread')
  t.equal(describePattern('^-?(a|b)(,-?(a|b))*$'), 'must be a comma list of: a, -a, b, -b', 'a list of few choices names them')
  t.equal(describePattern('^[0-9]{1,3}(,[0-9]{1,3}){0,4}$'), 'must be a comma list of up to 5 items, each 1 to 3 digits')
})
