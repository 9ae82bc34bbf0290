import promClient from 'prom-client'
import t from 'tap'
import { KeyedHistogram } from '../../plugins/histogram.js'

const BUCKETS = [0.005, 0.01, 0.025, 0.1]
// each bound exactly (le is inclusive), just past it, below the first, past the last, and zero
const VALUES = [0, 0.001, 0.005, 0.0050001, 0.01, 0.011, 0.025, 0.09, 0.1, 0.1000001, 7]

/** The same observations through prom-client's Histogram and ours, rendered by prom-client's registry. */
async function rendered (observe: (labels: Record<string, string>, value: number) => void, registry: promClient.Registry) {
  for (const [i, value] of VALUES.entries()) observe({ method: 'GET', route: '/v1/posts', status_code: i % 3 === 0 ? '404' : '200' }, value)
  return await registry.metrics()
}

t.test('renders what prom-client\'s Histogram renders for the same observations, bucket bounds included', async (t) => {
  const theirs = new promClient.Registry()
  const histogram = new promClient.Histogram({ name: 'd_seconds', help: 'h', labelNames: ['method', 'route', 'status_code'], buckets: BUCKETS, registers: [theirs] })
  const expected = await rendered((labels, v) => histogram.observe(labels, v), theirs)

  const ours = new promClient.Registry()
  const keyed = new KeyedHistogram('d_seconds', 'h', BUCKETS, ours)
  const actual = await rendered((labels, v) => keyed.seriesFor(`${labels.method} ${labels.status_code} ${labels.route}`, () => labels).observe(v), ours)

  // label order within a sample may differ; the samples and their values may not
  const canonical = (text: string) => text.split('\n').map(line => line.replace(/\{([^}]*)\}/, (_, l: string) => `{${l.split(',').sort().join(',')}}`)).sort()
  t.same(canonical(actual), canonical(expected))
  t.ok(canonical(actual).includes('d_seconds_bucket{le="0.005",method="GET",route="/v1/posts",status_code="200"} 2'), '0.001 and 0.005 (on the bound) are in le="0.005"')
})

t.test('a key is one series: its labels are made once, at its first observation', async (t) => {
  const keyed = new KeyedHistogram('q_seconds', 'h', BUCKETS, new promClient.Registry())
  let made = 0
  for (const v of [0.001, 0.2]) keyed.seriesFor('select', () => { made++; return { operation: 'select' } }).observe(v)
  t.equal(made, 1)
  const values = keyed.get().values
  t.same(values.filter(s => s.metricName === 'q_seconds_count'), [{ metricName: 'q_seconds_count', labels: { operation: 'select' }, value: 2 }])
  t.same(values.find(s => s.labels.le === '+Inf')?.value, 2)
  t.same(values.find(s => s.labels.le === 0.1)?.value, 1, 'cumulative: 0.2 is past the last bound')
  keyed.reset()
  t.same(keyed.get().values, [])
})
