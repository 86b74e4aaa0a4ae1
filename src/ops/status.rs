//! The status pages, rendered on the server as plain HTML (no front-end build; a few
//! lines of script reload the overview). Every value that comes from outside the code
//! (names, reasons, stderr, document text) goes through [`esc`].
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::http::Access;
use super::observer::{ExitNote, FailureNote};
use super::Ops;
use crate::actors::pool::PoolStatus;
use crate::store::jobs::{self, JobView};
use crate::store::records::FailureRecord;
use crate::store::state::JobState;
use crate::time::now_us;

/// Lines of stderr shown per failure, and of canonical text per job.
const TAIL_LINES: usize = 20;
const TEXT_LINES: usize = 20;
/// Rows of the queue-by-tenant table.
const QUEUE_ROWS: usize = 100;

/// HTML-escapes `s` for text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `us` (Unix microseconds) as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn utc(us: i64) -> String {
    if us <= 0 {
        return "–".into();
    }
    let secs = us.div_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

fn exit_text(e: &ExitNote) -> String {
    let how = match (e.code, e.signal) {
        (_, Some(s)) => format!("signal {s}"),
        (Some(c), None) => format!("code {c}"),
        (None, None) => "?".into(),
    };
    format!("{} ({how}) at {}", e.kind.unwrap_or("clean stop"), utc(e.at_us))
}

fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn page(title: &str, live: bool, body: &str) -> String {
    let script = if live {
        // Reload every 5 s unless the box is unticked (remembered in localStorage).
        r#"<script>
const box = document.getElementById("live");
box.checked = localStorage.getItem("telha-live") !== "off";
box.addEventListener("change", () => localStorage.setItem("telha-live", box.checked ? "on" : "off"));
setInterval(() => { if (box.checked) location.reload(); }, 5000);
</script>"#
    } else {
        ""
    };
    let toggle = if live { r#"<label class="live"><input type="checkbox" id="live"> refresh every 5 s</label>"# } else { "" };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }}
h1 {{ font-size: 1.4em; }} h2 {{ font-size: 1.1em; margin-top: 1.6em; }}
table {{ border-collapse: collapse; margin: .4em 0; }}
th, td {{ border: 1px solid #ccc; padding: .2em .6em; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }}
pre {{ background: #f7f7f7; padding: .5em; max-width: 110ch; overflow-x: auto; white-space: pre-wrap; margin: .2em 0; }}
.bad {{ color: #a00; }} .ok {{ color: #070; }} .muted {{ color: #777; }}
.bar {{ display: inline-block; height: .8em; background: #4a7; }} .bar.f {{ background: #c44; }}
.live {{ float: right; }}
</style></head>
<body>{toggle}<h1>{title}</h1>
{body}
{script}
</body></html>
"#,
        title = esc(title)
    )
}

pub fn denied() -> String {
    page("telha: token required", false, "<p>This page answers loopback callers, or others with the server's token: send <code>Authorization: Bearer &lt;token&gt;</code>, or open it once with <code>?token=&lt;token&gt;</code> (a cookie keeps it).</p>")
}

pub fn not_found(id: &str) -> String {
    page("telha: not found", false, &format!("<p>No job {}. <a href=\"/\">Back</a></p>", esc(id)))
}

fn hidden() -> &'static str {
    r#"<span class="muted">(hidden without the token)</span>"#
}

/// What the overview reads from the store, in one snapshot on the blocking pool.
struct Snapshot {
    depths: Vec<(String, JobState, u64)>,
    by_tenant: BTreeMap<(String, String), u64>,
    failures: Vec<(FailureNote, Option<FailureRecord>, String)>,
}

fn snapshot(store: &crate::store::Store, notes: Vec<FailureNote>) -> Result<Snapshot, crate::store::StoreError> {
    let txn = store.read()?;
    let depths = jobs::depths(&txn)?;
    let mut by_tenant = BTreeMap::new();
    for (format, tenant, _) in jobs::ready(&txn)? {
        *by_tenant.entry((format, tenant)).or_insert(0) += 1;
    }
    let mut failures = Vec::with_capacity(notes.len());
    for n in notes {
        let view = jobs::get(&txn, n.job)?;
        let name = view.as_ref().map(|v| v.job.name.clone()).unwrap_or_default();
        let rec = view.and_then(|v| v.failures.into_iter().find(|f| f.attempt == n.attempt));
        failures.push((n, rec, name));
    }
    Ok(Snapshot { depths, by_tenant, failures })
}

pub async fn overview(ops: &Ops, access: Access) -> String {
    let full = access == Access::Full;
    let pools = ops.supervisor.status().await;
    let pollers = ops.core.queue.snapshot().await.map(|s| s.pollers).unwrap_or_default();
    let (notes, exits, minutes) = {
        let r = match ops.recent.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        (r.failures.iter().cloned().collect::<Vec<_>>(), r.exits.clone(), r.throughput(now_us()))
    };
    let store = ops.core.store.clone();
    let pids: Vec<u32> = pools.iter().flat_map(|p| p.workers.iter().map(|w| w.pid)).filter(|p| *p != 0).collect();
    let read = tokio::task::spawn_blocking(move || {
        let rss: BTreeMap<u32, u64> = pids.iter().map(|p| (*p, crate::supervise::procfs::group_rss_bytes(*p))).collect();
        (snapshot(&store, notes), rss)
    })
    .await;
    let mut b = String::new();
    let (snap, rss) = match read {
        Ok((Ok(s), rss)) => (s, rss),
        Ok((Err(e), _)) => return page("telha status", true, &format!("<p class=\"bad\">store: {}</p>", esc(&e.to_string()))),
        Err(e) => return page("telha status", true, &format!("<p class=\"bad\">{}</p>", esc(&e.to_string()))),
    };
    if !full {
        b.push_str("<p class=\"muted\">Loopback view without the token: document contents (failure reasons, stderr, text) are hidden; open with <code>?token=</code> to see them.</p>\n");
    }
    pools_section(&mut b, &pools, &exits, &rss);
    pollers_section(&mut b, &pollers);
    queue_section(&mut b, &snap);
    throughput_section(&mut b, &minutes);
    failures_section(&mut b, &snap.failures, full);
    page("telha status", true, &b)
}

fn pools_section(b: &mut String, pools: &[PoolStatus], exits: &std::collections::HashMap<(String, usize), ExitNote>, rss: &BTreeMap<u32, u64>) {
    b.push_str("<h2>Pools</h2>\n");
    if pools.is_empty() {
        b.push_str("<p class=\"muted\">No pools configured.</p>\n");
        return;
    }
    b.push_str("<table id=\"pools\"><tr><th>pool</th><th>formats</th><th>workers</th><th>restarts</th><th>state</th><th>last error</th></tr>\n");
    for p in pools {
        let state = if p.degraded { "<span class=\"bad\">degraded</span>" } else { "<span class=\"ok\">ok</span>" };
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{} of {}</td><td>{}</td><td>{state}</td><td>{}</td></tr>",
            esc(&p.name),
            esc(&p.formats.join(", ")),
            p.live,
            p.desired,
            p.restarts,
            esc(&p.last_error)
        );
    }
    b.push_str("</table>\n<table id=\"workers\"><tr><th>worker</th><th>pid</th><th>state</th><th>current job</th><th>RSS</th><th>jobs done</th><th>restarts</th><th>last exit</th></tr>\n");
    for p in pools {
        for (slot, w) in p.workers.iter().enumerate() {
            let job = w.job_id.map_or_else(|| "–".to_string(), |j| format!("<a href=\"/jobs/{j}\">#{j}</a>"));
            let rss = rss.get(&w.pid).map_or_else(|| "–".to_string(), |r| mib(*r));
            let last = exits.get(&(p.name.clone(), slot)).map_or_else(|| "–".to_string(), |e| esc(&exit_text(e)));
            let pid = if w.pid == 0 { "–".to_string() } else { w.pid.to_string() };
            let _ = writeln!(b, "<tr><td>{}</td><td>{pid}</td><td>{}</td><td>{job}</td><td>{rss}</td><td>{}</td><td>{}</td><td>{last}</td></tr>", esc(&w.worker_id), w.state.as_str(), w.jobs_done, w.restarts);
        }
    }
    b.push_str("</table>\n");
}

fn pollers_section(b: &mut String, pollers: &[(String, Vec<String>, usize)]) {
    b.push_str("<h2>Workers polling</h2>\n<p class=\"muted\">Every worker with a PollJobs stream open, supervised here or started on another host.</p>\n");
    if pollers.is_empty() {
        b.push_str("<p class=\"muted\">None.</p>\n");
        return;
    }
    b.push_str("<table id=\"pollers\"><tr><th>worker</th><th>formats</th><th>jobs in flight</th></tr>\n");
    for (id, formats, n) in pollers {
        let _ = writeln!(b, "<tr><td>{}</td><td>{}</td><td>{n}</td></tr>", esc(id), esc(&formats.join(", ")));
    }
    b.push_str("</table>\n");
}

fn queue_section(b: &mut String, snap: &Snapshot) {
    b.push_str("<h2>Jobs by format and state</h2>\n<table id=\"depths\"><tr><th>format</th>");
    for s in JobState::ALL {
        let _ = write!(b, "<th>{}</th>", s.as_str());
    }
    b.push_str("</tr>\n");
    let formats: std::collections::BTreeSet<&str> = snap.depths.iter().map(|(f, _, _)| f.as_str()).collect();
    for f in formats {
        let _ = write!(b, "<tr><td>{}</td>", esc(f));
        for s in JobState::ALL {
            let n = snap.depths.iter().find(|(g, t, _)| g == f && *t == s).map_or(0, |d| d.2);
            let _ = write!(b, "<td>{n}</td>");
        }
        b.push_str("</tr>\n");
    }
    b.push_str("</table>\n<h2>Queue depth by format and tenant</h2>\n");
    if snap.by_tenant.is_empty() {
        b.push_str("<p class=\"muted\">Nothing queued.</p>\n");
        return;
    }
    b.push_str("<table id=\"queue\"><tr><th>format</th><th>tenant</th><th>queued</th></tr>\n");
    let mut rows: Vec<_> = snap.by_tenant.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for ((f, t), n) in rows.iter().take(QUEUE_ROWS) {
        let _ = writeln!(b, "<tr><td>{}</td><td>{}</td><td>{n}</td></tr>", esc(f), esc(t));
    }
    b.push_str("</table>\n");
    if rows.len() > QUEUE_ROWS {
        let _ = writeln!(b, "<p class=\"muted\">{} more rows not shown.</p>", rows.len() - QUEUE_ROWS);
    }
}

fn throughput_section(b: &mut String, minutes: &[super::observer::Minute]) {
    b.push_str("<h2>Throughput (jobs finished per minute, since this server started)</h2>\n<table id=\"throughput\"><tr><th>minute (UTC)</th><th>succeeded</th><th>failed attempts</th><th></th></tr>\n");
    let max = minutes.iter().map(|m| m.succeeded + m.failed).max().unwrap_or(0).max(1);
    for m in minutes {
        let (ok, bad) = (m.succeeded * 200 / max, m.failed * 200 / max);
        let at = utc(m.minute * 60_000_000);
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><span class=\"bar\" style=\"width:{ok}px\"></span><span class=\"bar f\" style=\"width:{bad}px\"></span></td></tr>",
            at.get(11..16).unwrap_or("–"),
            m.succeeded,
            m.failed
        );
    }
    b.push_str("</table>\n");
}

fn failures_section(b: &mut String, failures: &[(FailureNote, Option<FailureRecord>, String)], full: bool) {
    b.push_str("<h2>Recent failures</h2>\n");
    if failures.is_empty() {
        b.push_str("<p class=\"muted\">None since this server started.</p>\n");
        return;
    }
    b.push_str("<table id=\"failures\"><tr><th>when</th><th>job</th><th>format</th><th>attempt</th><th>kind</th><th>outcome</th><th>reason and stderr tail</th></tr>\n");
    for (n, rec, name) in failures {
        let name = if full && !name.is_empty() { format!(" {}", esc(name)) } else { String::new() };
        let detail = match (rec, full) {
            (_, false) => hidden().to_string(),
            (None, true) => "<span class=\"muted\">(no record)</span>".into(),
            (Some(r), true) => {
                let exit = match (r.exit_code, r.signal) {
                    (_, Some(s)) => format!(" <span class=\"muted\">signal {s}</span>"),
                    (Some(c), None) => format!(" <span class=\"muted\">exit code {c}</span>"),
                    _ => String::new(),
                };
                let tail = last_lines(&r.stderr_tail, TAIL_LINES);
                let tail = if tail.is_empty() { String::new() } else { format!("<pre class=\"stderr\">{}</pre>", esc(&tail)) };
                format!("{}{exit}{tail}", esc(&r.reason))
            }
        };
        let outcome = if n.dead { "<span class=\"bad\">dead</span>" } else { "retrying" };
        let _ = writeln!(
            b,
            "<tr class=\"failure\"><td>{}</td><td><a href=\"/jobs/{j}\">#{j}</a>{name}</td><td>{}</td><td>{}</td><td class=\"kind\">{}</td><td>{outcome}</td><td>{detail}</td></tr>",
            utc(n.at_us),
            esc(&n.format),
            n.attempt,
            esc(&n.kind),
            j = n.job
        );
    }
    b.push_str("</table>\n");
}

/// What the job page reads, in one snapshot.
struct JobSnapshot {
    view: JobView,
    labels: BTreeMap<String, u64>,
    text: Option<String>,
    truncated: bool,
}

/// Node counts are taken over at most this many nodes of the projection.
const MAX_NODES_READ: usize = 10_000;

fn job_snapshot(store: &crate::store::Store, id: u64) -> Result<Option<JobSnapshot>, String> {
    let txn = store.read().map_err(|e| e.to_string())?;
    let Some(view) = jobs::get(&txn, id).map_err(|e| e.to_string())? else { return Ok(None) };
    let (mut labels, mut text, mut truncated) = (BTreeMap::new(), None, false);
    if jobs::state_of(&view.job).ok() == Some(JobState::Succeeded) {
        if let Ok(p) = crate::graph::read::projection(&txn, id, None, MAX_NODES_READ, 0) {
            for n in &p.nodes {
                for l in &n.labels {
                    *labels.entry(l.clone()).or_insert(0) += 1;
                }
            }
            truncated = p.truncated;
            text = Some(p.text.lines().take(TEXT_LINES).collect::<Vec<_>>().join("\n"));
        }
    }
    Ok(Some(JobSnapshot { view, labels, text, truncated }))
}

pub async fn job_page(ops: &Ops, id: u64, access: Access) -> Option<String> {
    let full = access == Access::Full;
    let store = ops.core.store.clone();
    let snap = match tokio::task::spawn_blocking(move || job_snapshot(&store, id)).await {
        Ok(Ok(Some(s))) => s,
        Ok(Ok(None)) => return None,
        Ok(Err(e)) => return Some(page(&format!("job #{id}"), false, &format!("<p class=\"bad\">store: {}</p>", esc(&e)))),
        Err(e) => return Some(page(&format!("job #{id}"), false, &format!("<p class=\"bad\">{}</p>", esc(&e.to_string())))),
    };
    let j = &snap.view.job;
    let state = jobs::state_of(j).map_or("?", |s| s.as_str());
    let mut b = String::from("<p><a href=\"/\">← status</a></p>\n<table id=\"job\">\n");
    let name = if full { esc(&j.name) } else { hidden().into() };
    let rows = [
        ("state", format!("<span id=\"state\">{state}</span>")),
        ("format", esc(&j.format)),
        ("tenant", esc(&j.tenant)),
        ("name", name),
        ("attempts", j.attempts.to_string()),
        ("size", format!("{} bytes", j.size)),
        ("nodes", j.node_count.to_string()),
        ("submission hash", esc(&j.submission_hash)),
    ];
    for (k, v) in rows {
        let _ = writeln!(b, "<tr><th>{k}</th><td>{v}</td></tr>");
    }
    let links = |ids: &[u64]| if ids.is_empty() { "–".to_string() } else { ids.iter().map(|i| format!("<a href=\"/jobs/{i}\">#{i}</a>")).collect::<Vec<_>>().join(" ") };
    let _ = writeln!(b, "<tr><th>parents</th><td>{}</td></tr>\n<tr><th>children</th><td>{}</td></tr>\n</table>", links(&j.parents), links(&j.children));

    // History, from the times the store keeps: creation, each failed attempt, the
    // current lease, the last change.
    b.push_str("<h2>History</h2>\n<p class=\"muted\">Rebuilt from the stored times: creation, each failed attempt, the current lease and the last change.</p>\n<table id=\"history\"><tr><th>when</th><th>what</th></tr>\n");
    let mut events: Vec<(i64, String)> = vec![(j.created_at, "created (queued)".into())];
    for f in &snap.view.failures {
        events.push((f.at, format!("attempt {} failed: {}{} on {}", f.attempt, esc(&f.kind), if f.permanent { " (permanent)" } else { "" }, esc(&f.worker_id))));
    }
    if let Some(l) = &snap.view.lease {
        events.push((l.granted_at, format!("leased to {} (lease {}, deadline {})", esc(&l.worker_id), l.attempt, utc(l.deadline))));
    }
    events.push((j.updated_at, format!("now {state}")));
    events.sort_by_key(|e| e.0);
    for (at, what) in events {
        let _ = writeln!(b, "<tr><td>{}</td><td>{what}</td></tr>", utc(at));
    }
    b.push_str("</table>\n<h2>Failures</h2>\n");
    if snap.view.failures.is_empty() {
        b.push_str("<p class=\"muted\">None.</p>\n");
    } else {
        b.push_str("<table id=\"job-failures\"><tr><th>attempt</th><th>kind</th><th>permanent</th><th>when</th><th>exit</th><th>peak RSS</th><th>reason and stderr tail</th></tr>\n");
        for f in &snap.view.failures {
            let exit = match (f.exit_code, f.signal) {
                (_, Some(s)) => format!("signal {s}"),
                (Some(c), None) => format!("code {c}"),
                _ => "–".into(),
            };
            let detail = if full {
                let tail = last_lines(&f.stderr_tail, TAIL_LINES);
                let tail = if tail.is_empty() { String::new() } else { format!("<pre class=\"stderr\">{}</pre>", esc(&tail)) };
                format!("{}{tail}", esc(&f.reason))
            } else {
                hidden().into()
            };
            let rss = if f.peak_rss_bytes == 0 { "–".into() } else { mib(f.peak_rss_bytes) };
            let _ = writeln!(b, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{exit}</td><td>{rss}</td><td>{detail}</td></tr>", f.attempt, esc(&f.kind), f.permanent, utc(f.at));
        }
        b.push_str("</table>\n");
    }
    b.push_str("<h2>Nodes by label</h2>\n");
    if snap.labels.is_empty() {
        b.push_str("<p class=\"muted\">No projection (the job has not succeeded, or projected no nodes).</p>\n");
    } else {
        b.push_str("<table id=\"labels\"><tr><th>label</th><th>nodes</th></tr>\n");
        for (l, n) in &snap.labels {
            let _ = writeln!(b, "<tr><td>{}</td><td>{n}</td></tr>", esc(l));
        }
        b.push_str("</table>\n");
        if snap.truncated {
            let _ = writeln!(b, "<p class=\"muted\">Counted over the first {MAX_NODES_READ} nodes.</p>");
        }
    }
    if let Some(text) = &snap.text {
        let _ = writeln!(b, "<h2>Canonical text (first {TEXT_LINES} lines)</h2>");
        if full {
            let _ = writeln!(b, "<pre id=\"text\">{}</pre>", esc(text));
        } else {
            let _ = writeln!(b, "<p>{}</p>", hidden());
        }
    }
    Some(page(&format!("job #{id}"), false, &b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(esc(r#"<script>alert("x") & 'y'</script>"#), "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;");
    }

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(1_000_000), "1970-01-01 00:00:01");
        assert_eq!(utc(951_782_400_000_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_796_083_200_000_000 + 3_723_000_000), "2026-12-01 01:02:03");
    }
}
