/**
 * Where the time goes: reads a V8 .cpuprofile (node --cpu-prof; `BENCH_CPU_PROF=1 npm run bench`
 * writes one to bench/.tmp/profiles) and prints the functions with the most self time, and the
 * packages (node_modules/<name>, node: internals, ours) they belong to.
 *
 *   node --import tsx bench/profile-summary.ts bench/.tmp/profiles/<file>.cpuprofile [top]
 */
import { readFileSync } from 'node:fs'

interface Node { id: number, callFrame: { functionName: string, url: string, lineNumber: number }, children?: number[] }
interface Profile { nodes: Node[], samples: number[], timeDeltas: number[] }

const [file, topArg] = process.argv.slice(2)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const self = new Map<number, number>()
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
const total = [...self.values()].reduce((a, b) => a + b, 0)

const where = (url: string): string => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1]
  if (url.startsWith('node:')) return 'node internals'
  if (url === '') return '(native / GC / idle)'
  return 'roja: ' + url.replace(/^.*\/(src|plugins|schemas)\//, '$1/')
}
const byFunction = new Map<string, number>()
const byPackage = new Map<string, number>()
for (const node of profile.nodes) {
  const t = self.get(node.id) ?? 0
  if (t === 0) continue
  const { functionName, url, lineNumber } = node.callFrame
  const key = `${functionName || '(anonymous)'}  ${where(url)}:${lineNumber + 1}`
  byFunction.set(key, (byFunction.get(key) ?? 0) + t)
  byPackage.set(where(url), (byPackage.get(where(url)) ?? 0) + t)
}
const show = (title: string, map: Map<string, number>, top: number) => {
  console.log(`\n${title}`)
  for (const [k, t] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(100 * t / total).toFixed(1).padStart(5)} %  ${k}`)
}
show('self time by package', byPackage, 25)
show('self time by function', byFunction, Number(topArg ?? 30))
