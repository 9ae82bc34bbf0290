import type promClient from 'prom-client'

/** One labelled series: cumulative at scrape time, plain counts while observing. */
export class Series {
  /** observations per bucket, the last one past every bound (+Inf) */
  private readonly counts: number[]
  sum = 0
  count = 0

  constructor (readonly labels: Readonly<Record<string, string>>, private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0)
  }

  observe (value: number): void {
    let i = 0
    while (i < this.bounds.length && value > this.bounds[i]) i++
    this.counts[i]++
    this.sum += value
    this.count++
  }

  /** the `_bucket`, `_sum` and `_count` samples prom-client renders */
  samples (name: string): Array<{ metricName: string, labels: Record<string, string | number>, value: number }> {
    let cumulative = 0
    const buckets = this.bounds.map((le, i) => {
      cumulative += this.counts[i]
      return { metricName: `${name}_bucket`, labels: { ...this.labels, le }, value: cumulative }
    })
    return [
      ...buckets,
      { metricName: `${name}_bucket`, labels: { ...this.labels, le: '+Inf' }, value: this.count },
      { metricName: `${name}_sum`, labels: this.labels, value: this.sum },
      { metricName: `${name}_count`, labels: this.labels, value: this.count }
    ]
  }
}

/**
 * A Prometheus histogram whose series the caller finds by its own key (`GET 200 /v1/posts`): an
 * observation hashes no label set. prom-client's registry renders it from get() like its own.
 * Why: docs/decisions/0007-request-histogram.md
 */
export class KeyedHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly series = new Map<string, Series>()
  private readonly bounds: readonly number[]

  constructor (readonly name: string, readonly help: string, buckets: readonly number[], registry: promClient.Registry) {
    this.bounds = [...buckets].sort((a, b) => a - b)
    registry.registerMetric(this as unknown as promClient.Metric)
  }

  /** The series under `key`, made with `labels` the first time (the key must name those labels alone). */
  seriesFor (key: string, labels: () => Record<string, string>): Series {
    let series = this.series.get(key)
    if (series === undefined) {
      series = new Series(labels(), this.bounds)
      this.series.set(key, series)
    }
    return series
  }

  /** what prom-client's registry renders a metric from */
  get () {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: [...this.series.values()].flatMap(s => s.samples(this.name))
    }
  }

  reset (): void {
    this.series.clear()
  }
}
