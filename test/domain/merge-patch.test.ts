import t from 'tap'
import { bodyOf, mergePatch } from '../../src/domain/merge-patch.js'

// RFC 7396, Appendix A: target, patch, result. Below the top level mergePatch is the RFC's
// MergePatch exactly, so each case is run one level down, as the value of a member.
const RFC_EXAMPLES: Array<[unknown, unknown, unknown]> = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [['a', 'b'], ['c', 'd'], ['c', 'd']],
  [{ a: 'b' }, ['c'], ['c']],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }]
]

t.test('below the top level, a merge is RFC 7396 MergePatch (the examples of its Appendix A)', async (t) => {
  for (const [target, patch, result] of RFC_EXAMPLES) {
    const merged = mergePatch({ x: target, kept: 1 }, { x: patch }) as Record<string, unknown>
    t.same(merged, { x: result, kept: 1 }, `${JSON.stringify(target)} + ${JSON.stringify(patch)}`)
  }
})

t.test('at the top level a member present replaces, an absent one is kept, and null stays as null (a PUT body clears it)', async (t) => {
  const current = { title: 'A', body: 'text', tags: ['a', 'b'], media_url: 'https://m/1' }
  t.same(mergePatch(current, { title: 'B' }), { title: 'B', body: 'text', tags: ['a', 'b'], media_url: 'https://m/1' })
  t.same(mergePatch(current, { media_url: null, tags: ['c'] }), { title: 'A', body: 'text', tags: ['c'], media_url: null })
  t.same(mergePatch(current, {}), current, 'an empty patch keeps everything')
  t.same(current, { title: 'A', body: 'text', tags: ['a', 'b'], media_url: 'https://m/1' }, 'the current fields are not changed in place')
})

t.test('a member named __proto__ stays a member and never becomes a prototype', async (t) => {
  const patch = JSON.parse('{"__proto__": {"polluted": true}, "x": {"__proto__": {"polluted": true}}}') as Record<string, unknown>
  const merged = mergePatch({ x: {} }, patch) as Record<string, any>
  t.equal(Object.getPrototypeOf(merged), Object.prototype)
  t.equal(Object.getPrototypeOf(merged.x), Object.prototype)
  t.same(Object.keys(merged.x), ['__proto__'])
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('a change is a body, or a function of the resource as it is', async (t) => {
  t.same(bodyOf({ name: 'put' }, { name: 'current' }), { name: 'put' })
  t.same(bodyOf((current: { name: string }) => ({ name: `${current.name}, patched` }), { name: 'current' }), { name: 'current, patched' })
})
