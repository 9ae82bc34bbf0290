import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../plugins/config.js'
import { formatFindings } from './conventions/check.js'
import { checkApp } from './conventions/run.js'

// The app as `local` runs it (docs routes included), on a throw-away SQLite file.
const dir = mkdtempSync(join(tmpdir(), 'roja-conventions-'))
try {
  const config = loadConfig({
    ENVIRONMENT: 'local',
    LOG_LEVEL: 'silent',
    DATA_DIR: dir,
    DATABASE_URL: `sqlite:${join(dir, 'roja.sqlite')}`
  })
  const findings = await checkApp(config)
  console.log(formatFindings(findings))
  process.exitCode = findings.length === 0 ? 0 : 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
