/**
 * The committed documents (openapi/v1.json, v2.json) as a third party takes them: every schema
 * compiles in a standard, strict Ajv 2020 with ajv-formats (Roja's own formats stay in its
 * validator), every example matches its schema, every request body and JSON success answer has
 * one, and the media types of the bytes are exactly what the server can send.
 */
import { readFileSync } from 'node:fs'
import Ajv2020 from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import { supportedMimeTypes } from 'file-type'
import t from 'tap'
import { descriptions } from '../schemas/descriptions.js'
import { MEDIA_BYTE_TYPES } from '../schemas/media.js'
import { isActiveContent } from '../src/domain/media.js'
import { join } from 'node:path'
import { ROOT } from '../src/package-info.js'

type Doc = Record<string, any>
/** The members of an OpenAPI document (not schema keywords). */
const DOCUMENT_MEMBERS = ['openapi', 'info', 'servers', 'tags', 'paths', 'components', 'security', 'webhooks', 'externalDocs', 'jsonSchemaDialect']
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']
const load = (version: string): Doc => JSON.parse(readFileSync(join(ROOT, 'openapi', `${version}.json`), 'utf8'))

/** Every schema of a document with a JSON pointer to it, and every example with the schema it illustrates. */
function walk (doc: Doc) {
  const schemas: Array<{ pointer: string; schema: Doc }> = []
  const examples: Array<{ where: string; pointer: string; value: unknown }> = []
  const at = (...parts: string[]) => '#/' + parts.map(p => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')
  for (const name of Object.keys(doc.components?.schemas ?? {})) {
    schemas.push({ pointer: at('components', 'schemas', name), schema: doc.components.schemas[name] })
  }
  for (const [name, header] of Object.entries<Doc>(doc.components?.headers ?? {})) {
    schemas.push({ pointer: at('components', 'headers', name, 'schema'), schema: header.schema })
    if (header.example !== undefined) { examples.push({ where: `header ${name}`, pointer: at('components', 'headers', name, 'schema'), value: header.example }) }
  }
  const media = (base: string[], content: Doc, where: string) => {
    for (const [type, m] of Object.entries<Doc>(content ?? {})) {
      const pointer = at(...base, 'content', type, 'schema')
      schemas.push({ pointer, schema: m.schema })
      if (m.example !== undefined) examples.push({ where: `${where} ${type}`, pointer, value: m.example })
      for (const [name, e] of Object.entries<Doc>(m.examples ?? {})) examples.push({ where: `${where} ${type} ${name}`, pointer, value: e.value })
    }
  }
  for (const [path, item] of Object.entries<Doc>(doc.paths)) {
    for (const [method, op] of Object.entries<Doc>(item)) {
      if (!HTTP_METHODS.includes(method)) continue
      const where = `${method.toUpperCase()} ${path}`
      op.parameters?.forEach((p: Doc, i: number) => {
        const pointer = at('paths', path, method, 'parameters', String(i), 'schema')
        schemas.push({ pointer, schema: p.schema })
        if (p.example !== undefined) {
          // an exploded-false array parameter's example is the array
          examples.push({ where: `${where} parameter ${p.name}`, pointer, value: p.example })
        }
      })
      if (op.requestBody) media(['paths', path, method, 'requestBody'], op.requestBody.content, `${where} request`)
      for (const [status, response] of Object.entries<Doc>(op.responses)) { media(['paths', path, method, 'responses', status], response.content, `${where} ${status}`) }
    }
  }
  return { schemas, examples }
}

for (const version of ['v1', 'v2']) {
  t.test(`${version}: every schema compiles in a standard Ajv 2020 with ajv-formats, and every example matches`, async t => {
    const doc = load(version)
    // strict: an unknown keyword or format (a custom one leaking out) fails the compile
    const ajv = new Ajv2020.default({ strict: true, allErrors: true })
    formats.default(ajv)
    // the document around the schemas is not a schema: its members are declared so strict mode
    // lets the root through, and every schema inside is compiled strictly where it is referenced
    ajv.addVocabulary(DOCUMENT_MEMBERS)
    const id = `https://roja.dev/openapi/${version}.json`
    ajv.addSchema({ ...doc, $id: id }, id, undefined, false)
    const { schemas, examples } = walk(doc)
    t.ok(schemas.length > 20, `${schemas.length} schemas`)
    const uncompiled: string[] = []
    for (const { pointer } of schemas) {
      try {
        ajv.compile({ $ref: `${id}${pointer}` })
      } catch (err) {
        uncompiled.push(`${pointer}: ${(err as Error).message}`)
      }
    }
    t.same(uncompiled, [], `every one of the ${schemas.length} schemas compiles`)
    const mismatched: string[] = []
    for (const { where, pointer, value } of examples) {
      try {
        const validate = ajv.getSchema(`${id}${pointer}`) ?? ajv.compile({ $ref: `${id}${pointer}` })
        if (!validate(value)) mismatched.push(`${where}: ${ajv.errorsText(validate.errors)}`)
      } catch (err) {
        mismatched.push(`${where}: ${(err as Error).message}`)
      }
    }
    t.same(mismatched, [], `every one of the ${examples.length} examples matches its schema`)
  })

  t.test(`${version}: a realistic example on every request body and JSON success answer`, async t => {
    const doc = load(version)
    const without: string[] = []
    for (const [path, item] of Object.entries<Doc>(doc.paths)) {
      for (const [method, op] of Object.entries<Doc>(item)) {
        if (!HTTP_METHODS.includes(method)) continue
        const where = `${method.toUpperCase()} ${path}`
        for (const [type, media] of Object.entries<Doc>(op.requestBody?.content ?? {})) {
          if (media.example === undefined) without.push(`${where} request ${type}`)
        }
        for (const [status, response] of Object.entries<Doc>(op.responses)) {
          const json = response.content?.['application/json']
          if (Number(status) < 400 && json && json.example === undefined) without.push(`${where} ${status}`)
          if (
            Number(status) >= 400 &&
            Object.keys(response.content?.['application/problem+json']?.examples ?? {}).length === 0 &&
            json?.example === undefined
          ) {
            without.push(`${where} ${status} (no problem examples)`)
          }
        }
      }
    }
    t.same(without, [], 'no request body or answer lacks its example')
  })
}

t.test('the media types of downloaded bytes are what the sniffer can answer, plus text and octets', async t => {
  // Active content (XML, Flash) is served as text/plain, so its type never goes out.
  const expected = [...new Set([...supportedMimeTypes, 'text/plain', 'application/octet-stream'])]
    .filter(type => type !== 'application/json' && !isActiveContent(type))
    .sort()
  t.same([...MEDIA_BYTE_TYPES], expected, 'schemas/media.ts MEDIA_BYTE_TYPES is current (update it when file-type changes)')
  const op = load('v1').paths['/v1/media/{mediaId}'].get
  t.same(Object.keys(op.responses['200'].content).sort(), [...expected, 'application/json'].sort(), '200: the metadata and every byte type')
  t.same(Object.keys(op.responses['206'].content).sort(), expected, '206: the byte types')
  t.notOk(
    op.parameters.some((p: Doc) => p.name.toLowerCase() === 'accept'),
    'Accept is not a parameter'
  )
})

t.test('each description of schemas/descriptions.ts is an operation of a document, in full', async t => {
  const operations = new Map<string, string>()
  for (const version of ['v1', 'v2']) {
    for (const item of Object.values<Doc>(load(version).paths)) {
      for (const method of HTTP_METHODS) if (item[method]) operations.set(item[method].operationId, item[method].description)
    }
  }
  const unused = Object.keys(descriptions).filter(id => !operations.has(id))
  t.same(unused, [], 'no description of an operation that no longer exists')
  const different = Object.entries(descriptions).filter(([id, sentences]) => operations.has(id) && operations.get(id) !== sentences.join(' '))
  t.same(different.map(([id]) => id), [], 'the committed documents say each description as written')
})
