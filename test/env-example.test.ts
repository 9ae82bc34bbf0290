import { readFileSync } from 'node:fs'
import t from 'tap'
import { EnvSchema, loadConfig } from '../plugins/config.js'
import { join } from 'node:path'
import { ROOT } from '../src/package-info.js'

// .env.example is a newcomer's reference: it names every setting the schema reads, once, with
// the schema's own default, and copying it unchanged to .env changes nothing.
const text = readFileSync(join(ROOT, '.env.example'), 'utf8')
const entries = [...text.matchAll(/^# ([A-Z][A-Z0-9_]+)=(.*)$/gm)].map(m => ({ name: m[1], value: m[2] }))

t.test('.env.example lists every setting once, and nothing else', async (t) => {
  const names = entries.map(e => e.name)
  const schema = Object.keys(EnvSchema.properties)
  t.same(schema.filter(n => !names.includes(n)), [], 'settings missing from .env.example')
  t.same(names.filter(n => !schema.includes(n)), [], 'names in .env.example the schema does not read')
  t.same(names.filter((n, i) => names.indexOf(n) !== i), [], 'settings listed twice')
})

t.test('each shown value is the default, or blank where the default is derived', async (t) => {
  const wrong: string[] = []
  for (const { name, value } of entries) {
    const prop = (EnvSchema.properties as Record<string, { default?: unknown }>)[name]
    if (prop.default !== undefined && String(prop.default) !== value) wrong.push(`${name}=${value} (default ${String(prop.default)})`)
  }
  // Examples of a format where there is no default are allowed, so only defaults are held.
  t.same(wrong, [])
})

t.test('every setting line is commented: copied unchanged to .env it sets nothing', async (t) => {
  const active = text.split('\n').filter(l => l.trim() !== '' && !l.startsWith('#'))
  t.same(active, [])
  t.doesNotThrow(() => loadConfig({}))
})
