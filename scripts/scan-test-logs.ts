/**
 * After each run of the suite (scripts/test.sh): every log the test apps wrote to
 * ROJA_TEST_LOG_DIR, searched for every secret they were seen to issue (scripts/log-scan.ts).
 * A tap file, so CI counts it with the suite; a hit names the file and line, never the secret.
 */
import t from 'tap'
import { TEST_SECRET } from '../test/log-capture.js'
import { scanDir } from './log-scan.js'

const dir = process.env.ROJA_TEST_LOG_DIR
if (!dir) throw new Error('ROJA_TEST_LOG_DIR is not set: there are no test logs to scan')

t.test('the logs of the whole suite hold no secret it issued', async (t) => {
  const started = Date.now()
  const scan = scanDir(dir, [{ text: TEST_SECRET, what: 'the JWT secret' }])
  const searched = `${scan.lines} lines (${(scan.bytes / 1e6).toFixed(1)} MB) in ${scan.files} log files searched for ${scan.secrets} issued secrets, their signatures, JWT-shaped strings and the JWT secret in ${Date.now() - started} ms`
  t.comment(searched)
  // A scan of nothing would pass: after a whole run the recording itself must have worked. A run of
  // chosen files (npm test -- file) may start no app at all.
  if (process.env.ROJA_TEST_WHOLE_RUN === '1') {
    t.ok(scan.lines > 0, 'the test apps logged')
    t.ok(scan.secrets > 0, 'secrets were recorded')
  }
  t.same(scan.hits.map(h => `${h.file}:${h.line}: ${h.what}`), [], searched)
})
