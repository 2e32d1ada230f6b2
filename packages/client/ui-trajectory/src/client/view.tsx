// The trajectory table and turn timelines (loaded lazily when the dialog first opens).
import { useMemo } from 'react'
import type { SessionFeedState } from '@dsh/client-runtime'
import {
  buildTrajectory,
  formatCost,
  formatMs,
  turnRange,
  type Price,
  type RequestRow,
  type TurnRow,
} from '../model.ts'
import type { Translate } from './strings.ts'

export interface TrajectoryViewProps {
  t: Translate
  feed: SessionFeedState
  prices?: Record<string, Price>
}

const n = (v: number | undefined) => (v === undefined ? '–' : v.toLocaleString('en-US'))

function Timeline({ t, turn }: { t: Translate; turn: TurnRow }) {
  const { start, end } = turnRange(turn)
  const span = Math.max(1, end - start)
  const pct = (v: number) => `${(((v - start) / span) * 100).toFixed(2)}%`
  const width = (a: number, b: number) => `${Math.max(0.5, ((b - a) / span) * 100).toFixed(2)}%`
  return (
    <div className="dsh-traj-timeline" role="img" aria-label={t('timeline', { turn: turn.turn })}>
      {turn.requests.map((r) => {
        const rEnd = r.end ?? r.firstChunk ?? end
        return (
          <div key={`r${r.step}`} className="dsh-traj-lane">
            <span
              className="dsh-traj-bar dsh-traj-bar-wait"
              style={{ left: pct(r.start), width: width(r.start, r.firstChunk ?? rEnd) }}
              title={`${t('ttft')} ${formatMs(r.ttftMs)}`}
            />
            {r.firstChunk !== undefined ? (
              <span
                className="dsh-traj-bar dsh-traj-bar-gen"
                style={{ left: pct(r.firstChunk), width: width(r.firstChunk, rEnd) }}
                title={`${t('latency')} ${formatMs(r.latencyMs)}`}
              />
            ) : null}
            {r.tools.map((tool) => (
              <span
                key={tool.callId}
                className={`dsh-traj-bar dsh-traj-bar-tool${tool.isError ? ' dsh-traj-error' : ''}`}
                style={{ left: pct(tool.start), width: width(tool.start, tool.end ?? end) }}
                title={`${tool.name} ${formatMs(tool.durationMs)}`}
              />
            ))}
          </div>
        )
      })}
    </div>
  )
}

function RequestLine({ t, r }: { t: Translate; r: RequestRow }) {
  return (
    <tr data-trajectory-request={`${r.turn}.${r.step}`}>
      <td>{r.step}</td>
      <td className="dsh-traj-model">
        {r.model ?? '–'}
        {r.interrupted ? <span className="dsh-traj-flag"> {t('interrupted')}</span> : null}
      </td>
      <td data-col="input">{n(r.usage?.input)}</td>
      <td data-col="output">{n(r.usage === undefined ? undefined : r.usage.output + r.usage.reasoning)}</td>
      <td data-col="cacheRead">{n(r.usage?.cacheRead)}</td>
      <td data-col="latency">{formatMs(r.latencyMs)}</td>
      <td data-col="ttft">{formatMs(r.ttftMs)}</td>
      <td data-col="tools">
        {r.tools.length === 0
          ? '–'
          : r.tools.map((tool) => (
              <span
                key={tool.callId}
                className={`dsh-traj-tool${tool.isError ? ' dsh-traj-error' : ''}`}
                data-tool={tool.name}
              >
                {tool.name} {formatMs(tool.durationMs)}
              </span>
            ))}
      </td>
      <td data-col="cost">{r.cost === undefined ? '–' : formatCost(r.cost)}</td>
    </tr>
  )
}

export function TrajectoryView({ t, feed, prices }: TrajectoryViewProps) {
  // The feed's events grow in place; `version` says when they changed.
  // biome-ignore lint/correctness/useExhaustiveDependencies: feed.events grows in place (same array); feed.version is what changes when it does
  const trajectory = useMemo(() => buildTrajectory(feed.events, prices), [feed.version, feed.events, prices])
  const { turns, totals } = trajectory
  if (totals.requests === 0) return <p className="muted">{t('empty')}</p>
  return (
    <div className="dsh-trajectory">
      <p className="dsh-traj-totals" data-trajectory-totals="true">
        <strong>{t('totals')}</strong>
        {' · '}
        {t('requests', { count: totals.requests })}
        {' · '}
        {t('input')} {n(totals.input)}
        {' · '}
        {t('output')} {n(totals.output + totals.reasoning)}
        {' · '}
        {t('cacheRead')} {n(totals.cacheRead)}
        {' · '}
        {t('latency')} {formatMs(totals.latencyMs)}
        {' · '}
        {t('toolCalls', { count: totals.toolCalls })} ({t('toolTime', { time: formatMs(totals.toolMs) })})
        {totals.requests - totals.unpriced > 0 && totals.cost > 0 ? (
          <>
            {' · '}
            {t('cost')} <span data-trajectory-cost="true">{formatCost(totals.cost)}</span>
          </>
        ) : null}
        {totals.unpriced > 0 ? (
          <span className="muted">
            {' · '}
            {t('costUnknown', { count: totals.unpriced })}
          </span>
        ) : null}
      </p>
      {turns.map((turn) => (
        <section key={`t${turn.turn}-${turn.start}`} className="dsh-traj-turn" data-trajectory-turn={turn.turn}>
          <h3>
            {t('turn', { turn: turn.turn })}{' '}
            <span className="muted">
              {turn.reason ? t('turnReason', { reason: turn.reason }) : t('running')} ·{' '}
              {formatMs(turnRange(turn).end - turn.start)}
            </span>
          </h3>
          <Timeline t={t} turn={turn} />
          <table className="dsh-traj-table">
            <thead>
              <tr>
                <th>{t('step')}</th>
                <th>{t('model')}</th>
                <th>{t('input')}</th>
                <th>{t('output')}</th>
                <th>{t('cacheRead')}</th>
                <th>{t('latency')}</th>
                <th>{t('ttft')}</th>
                <th>{t('tools')}</th>
                <th>{t('cost')}</th>
              </tr>
            </thead>
            <tbody>
              {turn.requests.map((r) => (
                <RequestLine key={r.step} t={t} r={r} />
              ))}
            </tbody>
          </table>
        </section>
      ))}
    </div>
  )
}

export default TrajectoryView
