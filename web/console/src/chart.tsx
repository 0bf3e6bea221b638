// Spend per day as an inline SVG bar chart (no chart library), with the
// daily budget as a line when there is one. The picture is one image with
// a name that says what it shows; the numbers are in a table beside it
// (collapsed), so a screen reader gets them all.
import { Thead, usd } from "./ui";

export type Day = { day: string; cost: number };

// lastDays is the n days (YYYY-MM-DD) ending today in the time zone tz,
// with the spend of each from points (days with none, or only unpriced
// calls, are 0).
export function lastDays(n: number, points: { key: string; cost_usd: number | null }[], tz = "UTC", now = new Date()): Day[] {
  const by = new Map(points.map((p) => [p.key, p.cost_usd ?? 0]));
  const out: Day[] = [];
  for (let i = n - 1; i >= 0; i--) {
    const d = isoDay(-i, tz, now);
    out.push({ day: d, cost: by.get(d) ?? 0 });
  }
  return out;
}

// isoDay is the day (YYYY-MM-DD) offset days from today in the time zone
// tz (an IANA name, as the environment's autopilot configuration has it).
export function isoDay(offset = 0, tz = "UTC", now = new Date()): string {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).formatToParts(now);
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  // Calendar arithmetic on the zone's date: a day is a day, whatever its hours.
  return new Date(Date.UTC(part("year"), part("month") - 1, part("day") + offset)).toISOString().slice(0, 10);
}

const W = 640;
const H = 180;
const PAD = { l: 48, r: 8, t: 10, b: 22 };

// SpendChart draws days (of the time zone tz) against the daily budget.
export function SpendChart({ days, budget, title, tz }: { days: Day[]; budget: number | null; title: string; tz: string }) {
  const max = Math.max(budget ?? 0, ...days.map((d) => d.cost), 0.01);
  const w = (W - PAD.l - PAD.r) / Math.max(1, days.length);
  const y = (v: number) => PAD.t + (H - PAD.t - PAD.b) * (1 - v / max);
  const total = days.reduce((s, d) => s + d.cost, 0);
  const over = budget == null ? 0 : days.filter((d) => d.cost > budget).length;
  const name = `${title}: ${usd(total)} over ${days.length} days` + (budget == null ? "" : `, daily budget ${usd(budget)}, exceeded on ${over} ${over === 1 ? "day" : "days"}`);
  return (
    <figure class="chart-box">
      <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={name}>
        <line x1={PAD.l} x2={W - PAD.r} y1={y(0)} y2={y(0)} stroke="currentColor" stroke-opacity="0.4" />
        <text x={PAD.l - 6} y={y(max) + 4} text-anchor="end">
          {usd(max)}
        </text>
        <text x={PAD.l - 6} y={y(0)} text-anchor="end">
          {usd(0)}
        </text>
        {days.map((d, i) => (
          <rect key={d.day} x={PAD.l + i * w + w * 0.15} width={w * 0.7} y={y(d.cost)} height={Math.max(0, y(0) - y(d.cost))} fill="currentColor">
            <title>{`${d.day}: ${usd(d.cost)}`}</title>
          </rect>
        ))}
        {budget != null && <line class="budget" x1={PAD.l} x2={W - PAD.r} y1={y(budget)} y2={y(budget)} stroke-width="2" stroke-dasharray="6 4" />}
        <text x={PAD.l} y={H - 6}>
          {days[0]?.day}
        </text>
        <text x={W - PAD.r} y={H - 6} text-anchor="end">
          {days[days.length - 1]?.day}
        </text>
      </svg>
      <figcaption class="legend">
        <span>Bars: spend per day ({tz === "UTC" ? "UTC days" : `days of ${tz}`})</span>
        {budget != null && <span>Dashed line: daily budget {usd(budget)}</span>}
      </figcaption>
      <details>
        <summary>The numbers</summary>
        <table>
          <Thead cols={["Day", "Spend"]} />
          <tbody>
            {days.map((d) => (
              <tr key={d.day}>
                <td>{d.day}</td>
                <td class="num">{usd(d.cost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
