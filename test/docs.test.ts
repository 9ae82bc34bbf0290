import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, posix, sep } from 'node:path'
import { lexer, type Token, type Tokens } from 'marked'
import t from 'tap'
import { EnvSchema } from '../plugins/config.js'
import { ROOT } from '../src/package-info.js'

/**
 * The Markdown files as GitHub renders them (GFM, lexed by marked): a table that a blank line
 * cut in two, a setting or command listed twice, a link to nothing, or an `npm run` of a script
 * that does not exist is a failure naming every file:line. No database.
 */

export interface Doc { path: string, text: string }
export interface Repo {
  /** a repository path (posix, from the root) exists, file or folder */
  exists: (path: string) => boolean
  /** a Markdown file's text, to read its headings */
  read: (path: string) => string | undefined
  scripts: ReadonlySet<string>
}
export interface Findings {
  strayRows: string[]
  unevenRows: string[]
  duplicateKeys: string[]
  deadLinks: string[]
  unknownScripts: string[]
}

type Cell = Tokens.TableCell

/** Every token below these, depth first: inline ones, list items, table cells' contents. */
function * walk (tokens: readonly Token[]): Generator<Token> {
  for (const token of tokens) {
    yield token
    if (token.type === 'table') {
      const table = token as Tokens.Table
      for (const cell of [...table.header, ...table.rows.flat()]) yield * walk(cell.tokens)
    }
    if ('tokens' in token && Array.isArray(token.tokens)) yield * walk(token.tokens)
    if (token.type === 'list') yield * walk((token as Tokens.List).items)
  }
}

function lineAt (text: string, index: number): number {
  let line = 1
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) line++
  return line
}

/** The top-level tokens of a file with the lines each spans (1-based, inclusive). */
function blocks (text: string): Array<{ token: Token, from: number, to: number }> {
  const out: Array<{ token: Token, from: number, to: number }> = []
  let at = 0
  for (const token of lexer(text, { gfm: true })) {
    const found = text.startsWith(token.raw, at) ? at : text.indexOf(token.raw, at)
    if (found >= 0) at = found
    const from = lineAt(text, at)
    out.push({ token, from, to: from + token.raw.replace(/\n+$/, '').split('\n').length - 1 })
    if (found >= 0) at += token.raw.length
  }
  return out
}

/** The cells of a table row as GFM splits it: on every `|` not escaped, code spans included. */
function cellCount (row: string): number {
  const cells = row.trim().split(/(?<!\\)\|/)
  if (row.trim().startsWith('|')) cells.shift()
  if (row.trim().endsWith('|') && !row.trim().endsWith('\\|')) cells.pop()
  return cells.length
}

/** Each table of a file with the line of its header row. */
function tables (doc: Doc): Array<{ table: Tokens.Table, line: number }> {
  const lines = doc.text.split('\n')
  const out: Array<{ table: Tokens.Table, line: number }> = []
  for (const { token, from } of blocks(doc.text)) {
    for (const inner of walk([token])) {
      if (inner.type !== 'table') continue
      const head = inner.raw.split('\n')[0].trim()
      const index = lines.findIndex((l, i) => i >= from - 1 && l.trim() === head)
      out.push({ table: inner as Tokens.Table, line: index + 1 })
    }
  }
  return out
}

/** GitHub's anchor for each heading of a Markdown text, repeats numbered as GitHub does. */
export function anchors (text: string): Set<string> {
  const plain = (tokens: readonly Token[]): string => tokens.map(tk =>
    'tokens' in tk && Array.isArray(tk.tokens) ? plain(tk.tokens) : ('text' in tk ? String(tk.text) : '')).join('')
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const token of walk(lexer(text, { gfm: true }))) {
    if (token.type !== 'heading') continue
    const base = plain((token as Tokens.Heading).tokens).trim().toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

const SETTINGS_HEADER = /^(settings?|variables?)$/i
const COMMANDS_HEADER = /^commands?$/i

/** A settings or command table's keys in one first cell: each backticked name, commands without their placeholders. */
function keysOf (cell: Cell, commands: boolean, scripts: ReadonlySet<string>): string[] {
  return [...cell.text.matchAll(/`([^`]+)`/g)].map(([, name]) => {
    if (!commands) return name
    const command = name.replace(/<[^>]*>|\[[^\]]*\]/g, '').replace(/\s+/g, ' ').trim()
    return !command.startsWith('npm ') && scripts.has(command.split(' ')[0]) ? `npm run ${command}` : command
  })
}

export function checkDocs (docs: readonly Doc[], repo: Repo): Findings {
  const findings: Findings = { strayRows: [], unevenRows: [], duplicateKeys: [], deadLinks: [], unknownScripts: [] }
  const keys = new Map<string, string[]>()
  for (const doc of docs) {
    const lines = doc.text.split('\n')
    // A line that starts like a table row must be a row of a parsed table (code and HTML aside).
    const spans = blocks(doc.text)
    lines.forEach((line, i) => {
      if (!line.trimStart().startsWith('|')) return
      const block = spans.find(s => s.from <= i + 1 && i + 1 <= s.to)?.token
      if (block === undefined || block.type === 'code' || block.type === 'html' || block.type === 'table') return
      const rows = [...walk([block])].filter(tk => tk.type === 'table').flatMap(tk => tk.raw.split('\n').map(r => r.trim()))
      if (!rows.includes(line.trim())) findings.strayRows.push(`${doc.path}:${i + 1}: ${line.trim().slice(0, 60)}`)
    })

    for (const { table, line } of tables(doc)) {
      const width = table.header.length
      table.raw.replace(/\n+$/, '').split('\n').forEach((row, i) => {
        if (i !== 1 && cellCount(row) !== width) findings.unevenRows.push(`${doc.path}:${line + i}: ${cellCount(row)} cells in a table of ${width}`)
      })
      const head = table.header[0]?.text.trim() ?? ''
      const commands = COMMANDS_HEADER.test(head)
      if (!commands && !SETTINGS_HEADER.test(head)) continue
      table.rows.forEach((row, i) => {
        for (const key of keysOf(row[0], commands, repo.scripts)) keys.set(key, [...(keys.get(key) ?? []), `${doc.path}:${line + 2 + i}`])
      })
    }

    for (const token of walk(lexer(doc.text, { gfm: true }))) {
      if (token.type !== 'link' && token.type !== 'image') continue
      const href = (token as Tokens.Link).href
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue
      const [path, anchor] = href.split('#', 2) as [string, string | undefined]
      const target = path === '' ? doc.path : posix.normalize(path.startsWith('/') ? path.slice(1) : posix.join(posix.dirname(doc.path), decodeURI(path)))
      const where = `${doc.path}:${lineAt(doc.text, doc.text.indexOf(token.raw))}`
      if (target.startsWith('..') || !repo.exists(target.replace(/\/$/, ''))) {
        findings.deadLinks.push(`${where}: ${href} (no ${target})`)
        continue
      }
      if (anchor === undefined || !target.endsWith('.md')) continue
      if (!anchors(repo.read(target) ?? '').has(decodeURIComponent(anchor))) findings.deadLinks.push(`${where}: ${href} (no heading #${anchor} in ${target})`)
    }

    // `npm run X`, in prose or code, must name a script of package.json.
    for (const match of doc.text.matchAll(/\bnpm run(?:\s+(?:--silent|-s|--if-present))*\s+([\w:.-]+)/g)) {
      if (!repo.scripts.has(match[1])) findings.unknownScripts.push(`${doc.path}:${lineAt(doc.text, match.index)}: npm run ${match[1]}`)
    }
  }
  for (const [key, at] of keys) if (at.length > 1) findings.duplicateKeys.push(`\`${key}\` at ${at.join(', ')}`)
  return findings
}

/** The tracked Markdown files; outside a git checkout (an exported tree), every .md file but installed and generated ones. */
function markdownFiles (): string[] {
  try {
    return execFileSync('git', ['ls-files', '-z', '*.md'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\0').filter(Boolean)
  } catch {
    return (readdirSync(ROOT, { recursive: true }) as string[]).map(p => p.split(sep).join('/'))
      .filter(p => p.endsWith('.md') && !/(^|\/)(node_modules|dist|data|\.tmp|\.git)\//.test(p))
  }
}
const tracked = markdownFiles().filter(path => existsSync(join(ROOT, path)))
const docs = tracked.map(path => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }))
const scripts = new Set(Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts))
const repo: Repo = {
  exists: path => existsSync(join(ROOT, path)),
  read: path => existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : undefined,
  scripts
}
const found = checkDocs(docs, repo)

t.test('the Markdown files are found', async (t) => {
  t.ok(docs.some(d => d.path === 'README.md'), 'README.md is among them')
  t.ok(docs.some(d => d.path.startsWith('docs/')), 'and docs/')
})

const checks: Array<[string, keyof typeof found, string]> = [
  ['every line that starts like a table row is a row of a parsed table', 'strayRows', 'rows outside any table (a blank line or a paragraph cut the table)'],
  ['every table row has as many cells as its header', 'unevenRows', 'rows whose cell count differs from their header\'s'],
  ['no setting or command is listed twice across the settings and command tables', 'duplicateKeys', 'keys listed more than once'],
  ['every relative link and image reaches a file, and its #anchor a heading there', 'deadLinks', 'dead links'],
  ['every `npm run X` names a script of package.json', 'unknownScripts', 'unknown scripts']
]
for (const [name, key, what] of checks) {
  t.test(name, async (t) => { t.same(found[key], [], what) })
}

t.test('docs/operations.md lists every setting of plugins/config.ts once, with its default', async (t) => {
  const doc = docs.find(d => d.path === 'docs/operations.md')
  if (doc === undefined) return t.fail('docs/operations.md is missing')
  const listed = new Map<string, string>()
  for (const { table } of tables(doc)) {
    if (!SETTINGS_HEADER.test(table.header[0]?.text.trim() ?? '')) continue
    for (const row of table.rows) for (const key of keysOf(row[0], false, scripts)) listed.set(key, row[1]?.text ?? '')
  }
  const schema = EnvSchema.properties as unknown as Record<string, { default?: unknown }>
  t.same([...Object.keys(schema)].filter(k => !listed.has(k)), [], 'settings of the schema missing from the tables')
  t.same([...listed.keys()].filter(k => !(k in schema)), [], 'settings in the tables that the schema does not have')
  const wrong = Object.entries(schema)
    .filter(([key, p]) => p.default !== undefined && p.default !== '' && listed.has(key) && !listed.get(key)!.includes(`\`${String(p.default)}\``))
    .map(([key, p]) => `${key}: default ${String(p.default)}, listed as ${listed.get(key)}`)
  t.same(wrong, [], 'defaults that differ from the schema\'s')
})

t.test('the checker catches what it is for', async (t) => {
  const planted: Doc[] = [
    {
      path: 'README.md',
      text: [
        '# Planted', // 1
        '', // 2
        '| Setting | Default | Meaning |', // 3
        '|---|---|---|', // 4
        '| `A_ONE` | `1` | one |', // 5
        '| `A_THREE` | `3` | three | extra |', // 6
        '', // 7
        '| `A_TWO` | `2` | two |', // 8
        '', // 9
        'See [the guide](docs/guide.md#a-heading), [gone](docs/gone.md) and [nowhere](docs/guide.md#nowhere).', // 10
        '', // 11
        '```sh', // 12
        'npm run --silent known && npm run nonesuch', // 13
        '| not a table, code |', // 14
        '```', // 15
        ''
      ].join('\n')
    },
    {
      path: 'docs/guide.md',
      text: [
        '# Guide', // 1
        '', // 2
        '## A heading', // 3
        '', // 4
        '| Variable | Default | Meaning |', // 5
        '|---|---|---|', // 6
        '| `A_ONE` | `1` | listed again |', // 7
        '', // 8
        '| Command | What it does |', // 9
        '|---|---|', // 10
        '| `npm run known -- x <name>` | a command |', // 11
        '| `known -- x` | the same command again |', // 12
        '', // 13
        'Back to [the top](../README.md#planted) and [here](#a-heading).', // 14
        ''
      ].join('\n')
    }
  ]
  const files = new Map(planted.map(d => [d.path, d.text]))
  const caught = checkDocs(planted, {
    exists: path => files.has(path) || path === 'docs',
    read: path => files.get(path),
    scripts: new Set(['known'])
  })
  t.same(caught.strayRows, ['README.md:8: | `A_TWO` | `2` | two |'], 'a table broken by a blank line')
  t.same(caught.unevenRows, ['README.md:6: 4 cells in a table of 3'], 'a row with a cell too many')
  t.same(caught.duplicateKeys, [
    '`A_ONE` at README.md:5, docs/guide.md:7',
    '`npm run known -- x` at docs/guide.md:11, docs/guide.md:12'
  ], 'a setting and a command listed twice')
  t.same(caught.deadLinks, [
    'README.md:10: docs/gone.md (no docs/gone.md)',
    'README.md:10: docs/guide.md#nowhere (no heading #nowhere in docs/guide.md)'
  ], 'a link to a missing file and one to a missing heading; good links pass')
  t.same(caught.unknownScripts, ['README.md:13: npm run nonesuch'], 'an npm script package.json lacks')
})

t.test('anchors follow GitHub\'s slugs', async (t) => {
  t.same([...anchors('# Logs, metrics, tracing\n## `npm run fleet:test`\n## The fleet: HAProxy in front\n## Logs, metrics, tracing\n')],
    ['logs-metrics-tracing', 'npm-run-fleettest', 'the-fleet-haproxy-in-front', 'logs-metrics-tracing-1'])
})
