import t from 'tap'
t.test('group', async t => { t.equal(1, 2, 'one is two'); t.ok(true) })
t.test('fine', async t => { t.ok(true) })
