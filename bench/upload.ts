/**
 * Upload benchmark (not part of npm test): streams a generated 1 GiB file to
 * POST /v1/media on a server started as a child process on loopback, samples the server's
 * RSS from /proc/<pid>/status, and reports peak RSS growth (goal < 64 MiB) and throughput
 * beside `dd … conv=fsync` writing the same number of bytes to the same disk.
 *
 *   npm run bench:upload [-- --mib 1024]
 */
import { spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { Instance } from '../scripts/fleet/fleet.js'
import { freePort, request, rssBytes, signUpVerified } from '../scripts/proc.js'

const MiB = 1024 * 1024
const arg = process.argv.indexOf('--mib')
const SIZE_MIB = arg > 0 ? Number(process.argv[arg + 1]) : 1024
const SIZE = SIZE_MIB * MiB
const GOAL_MIB = 64
const BOUNDARY = '----roja-bench-boundary'

const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'roja-bench-'))

/** Streams a multipart upload of `size` bytes made of one repeated random block. */
function upload (port: number, token: string, size: number): Promise<{ status: number; body: string; sha256: string }> {
  const block = randomBytes(MiB)
  const hash = createHash('sha256')
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/media',
        headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
      },
      res => {
        let body = ''
        res
          .setEncoding('utf8')
          .on('data', (c: string) => {
            body += c
          })
          .on('end', () => resolve({ status: res.statusCode!, body, sha256: hash.digest('hex') }))
      }
    )
    req.on('error', reject)
    void (async () => {
      req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\n\r\n`)
      for (let sent = 0; sent < size; sent += block.length) {
        const chunk = block.subarray(0, Math.min(block.length, size - sent))
        hash.update(chunk)
        if (!req.write(chunk)) await new Promise(resolve => req.once('drain', resolve))
      }
      req.end(`\r\n--${BOUNDARY}--\r\n`)
    })()
  })
}

function dd (size: number): { seconds: number; line: string } {
  const target = join(dir, 'dd.bin')
  const started = process.hrtime.bigint()
  const run = spawnSync('dd', ['if=/dev/zero', `of=${target}`, 'bs=1M', `count=${size / MiB}`, 'conv=fsync'], { encoding: 'utf8' })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  rmSync(target, { force: true })
  if (run.status !== 0) throw new Error(`dd failed: ${run.stderr}`)
  return { seconds, line: run.stderr.trim().split('\n').pop() ?? '' }
}

async function main () {
  const server = new Instance('roja', await freePort(), ['--import', 'tsx', 'src/server.ts'], {
    ENVIRONMENT: 'test',
    HOST: '127.0.0.1',
    DATA_DIR: dir,
    DATABASE_URL: `sqlite:${join(dir, 'roja.sqlite')}`,
    JWT_SECRET: randomBytes(32).toString('hex'),
    MAX_UPLOAD_BYTES: String(Math.max(SIZE, 1073741824)),
    // the warm-up and the measured upload both fit the storage quota
    MEDIA_QUOTA_BYTES: String(Math.max(SIZE + MiB, 5368709120)),
    LOG_LEVEL: 'warn',
    // The bench measures memory and throughput, not load shedding: a busy machine must not get 503s.
    MAX_EVENT_LOOP_DELAY_MS: '60000'
  })
  const { port } = server
  try {
    await server.start()
    const pid = server.pid!
    // Uploads need a verified address: the link sign-up queued is opened, as its owner would.
    const outbox = new Database(join(dir, 'roja.sqlite'))
    const mail = async (email: string) =>
      (outbox.prepare('select body from outbox_message where to_address = ?').get(email) as { body: string } | undefined)?.body
    const { token } = await signUpVerified(
      (method, path, body) => request({ port, method, path }, body),
      mail,
      'bench',
      randomBytes(12).toString('hex')
    )
    outbox.close()

    // Warm up (module loading, first-request JIT), then settle, so the baseline is the idle server.
    const warm = await upload(port, token, MiB)
    if (warm.status !== 201) throw new Error(`warm-up upload: ${warm.status} ${warm.body}`)
    await sleep(500)
    const baseline = rssBytes(pid)
    let peak = baseline
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(pid))
    }, 20)

    const started = process.hrtime.bigint()
    const result = await upload(port, token, SIZE)
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    clearInterval(sampler)
    peak = Math.max(peak, rssBytes(pid))
    if (result.status !== 201) throw new Error(`upload: ${result.status} ${result.body}`)
    const media = JSON.parse(result.body) as { size: number; sha256: string }
    const exact = media.size === SIZE && media.sha256 === result.sha256

    const disk = dd(SIZE)
    const growth = (peak - baseline) / MiB
    const rows = [
      ['upload size', `${SIZE_MIB} MiB`],
      ['server RSS baseline', `${(baseline / MiB).toFixed(1)} MiB`],
      ['server RSS peak', `${(peak / MiB).toFixed(1)} MiB`],
      ['peak RSS growth', `${growth.toFixed(1)} MiB (goal < ${GOAL_MIB} MiB: ${growth < GOAL_MIB ? 'met' : 'MISSED'})`],
      ['upload time', `${seconds.toFixed(2)} s`],
      ['upload throughput', `${(SIZE_MIB / seconds).toFixed(1)} MiB/s`],
      ['stored byte-exact', exact ? 'yes (size and sha256 match)' : 'NO'],
      ['dd conv=fsync time', `${disk.seconds.toFixed(2)} s`],
      ['dd throughput', `${(SIZE_MIB / disk.seconds).toFixed(1)} MiB/s  (dd: ${disk.line})`],
      ['upload / dd', `${((SIZE_MIB / seconds / (SIZE_MIB / disk.seconds)) * 100).toFixed(0)} %`]
    ]
    const width = Math.max(...rows.map(r => r[0].length))
    console.log(rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n'))
    if (!exact || growth >= GOAL_MIB) process.exitCode = 1
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
