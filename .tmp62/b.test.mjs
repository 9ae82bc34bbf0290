import t from 'tap'
await new Promise(r => setTimeout(r, 1500))
t.ok(true, 'slow ok')
