//! Reads of the graph from one snapshot, always within one tenant: a job's
//! projection (only once the job succeeded), a node with its versions and edges,
//! ambiguities. An edge endpoint is resolved against the tenant's nodes at read
//! time: one that does not exist (yet) is reported as dangling.
//!
//! Visibility: a streamed job's partials are applied as they arrive ([`super::apply`]),
//! so the tables hold rows of jobs still running. A node version, an edge or an
//! ambiguity is shown only once the job that wrote it has succeeded; until then a
//! node reads as absent and an edge to it as dangling.
use std::collections::HashMap;

use prost::Message;
use redb::{ReadOnlyTable, ReadTransaction};

use super::GraphError;
use crate::store::jobs::state_of;
use crate::store::records::*;
use crate::store::state::JobState;
use crate::store::tables::*;

#[derive(Debug, Clone)]
pub struct NodeView {
    pub id: String,
    pub version: u32,
    pub labels: Vec<String>,
    pub properties_json: String,
    pub span_refs: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct EdgeView {
    pub kind: String,
    pub from_id: String,
    pub to_id: String,
    pub properties_json: String,
    pub from_dangling: bool,
    pub to_dangling: bool,
}

#[derive(Debug, Clone)]
pub struct AmbiguityView {
    pub job: u64,
    pub ambiguity: AmbiguityRecord,
}

/// A job's projection in the wire's own terms, ids resolved.
#[derive(Debug, Clone)]
pub struct Projection {
    pub job: JobRecord,
    pub text: String,
    pub spans: Vec<SpanRecord>,
    pub nodes: Vec<NodeView>,
    pub relationships: Vec<EdgeView>,
    pub ambiguities: Vec<AmbiguityView>,
    /// More than `max_items` spans, nodes, relationships or ambiguities: lists were cut.
    pub truncated: bool,
}

#[derive(Debug, Clone)]
pub struct NodeDetail {
    pub tenant: String,
    pub id: String,
    pub versions: Vec<(u32, NodeVersionRecord)>,
    pub edges_out: Vec<EdgeView>,
    pub edges_in: Vec<EdgeView>,
    pub truncated: bool,
}

/// What one read can see: the graph tables and, cached, which jobs have succeeded.
struct View {
    jobs: ReadOnlyTable<u64, &'static [u8]>,
    versions: ReadOnlyTable<(&'static str, &'static str, u32), &'static [u8]>,
    succeeded: HashMap<u64, bool>,
}

impl View {
    fn open(txn: &ReadTransaction) -> Result<Self, GraphError> {
        Ok(Self { jobs: txn.open_table(JOBS)?, versions: txn.open_table(NODE_VERSIONS)?, succeeded: HashMap::new() })
    }

    /// Whether what `job` wrote is visible: it has succeeded.
    fn job_visible(&mut self, job: u64) -> Result<bool, GraphError> {
        if let Some(v) = self.succeeded.get(&job) {
            return Ok(*v);
        }
        let visible = match self.jobs.get(job)? {
            Some(b) => state_of(&JobRecord::decode(b.value())?)? == JobState::Succeeded,
            None => false,
        };
        self.succeeded.insert(job, visible);
        Ok(visible)
    }

    /// Whether node `id` exists for readers: a version of it is visible (the latest
    /// one, but for a node whose only version belongs to a job still running).
    fn exists(&mut self, tenant: &str, id: &str) -> Result<bool, GraphError> {
        for e in self.versions.range((tenant, id, 0)..=(tenant, id, u32::MAX))?.rev() {
            if self.job_visible(NodeVersionRecord::decode(e?.1.value())?.job)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A finished job's projection. `tenant`, when given, must be the job's tenant.
/// Each list starts after its first `skip` entries (paging); the text comes only with `skip` 0.
pub fn projection(txn: &ReadTransaction, job: u64, tenant: Option<&str>, max_items: usize, skip: u64) -> Result<Projection, GraphError> {
    let rec = match txn.open_table(JOBS)?.get(job)? {
        Some(b) => JobRecord::decode(b.value())?,
        None => return Err(GraphError::NoJob(job)),
    };
    if tenant.is_some_and(|t| t != rec.tenant) {
        return Err(GraphError::NoJob(job));
    }
    let state = state_of(&rec)?;
    if state != JobState::Succeeded {
        return Err(GraphError::NotVisible { job, state: state.as_str() });
    }
    let t = rec.tenant.clone();
    let mut truncated = false;
    let mut text = Vec::new();
    if skip == 0 {
        for e in txn.open_table(JOB_TEXT)?.range((job, 0)..=(job, u32::MAX))? {
            text.extend_from_slice(e?.1.value());
        }
    }
    let page = Page { skip, max: max_items };
    let text = String::from_utf8(text).map_err(|e| crate::store::StoreError::Corrupt(format!("text of job {job}: {e}")))?;
    let mut spans = Vec::new();
    truncated |= each_chunk(txn, JOB_SPANS, job, page, |c: SpanRecords| c.spans, |s| {
        spans.push(s);
        Ok(())
    })?;
    let mut view = View::open(txn)?;
    let mut nodes = Vec::new();
    truncated |= each_chunk(txn, JOB_NODES, job, page, |c: ProjectedNodes| c.nodes, |p| {
        let v = match view.versions.get((t.as_str(), p.node_id.as_str(), p.version))? {
            Some(b) => NodeVersionRecord::decode(b.value())?,
            None => return Err(crate::store::StoreError::Corrupt(format!("job {job} names version {} of node {:?}, which is missing", p.version, p.node_id)).into()),
        };
        nodes.push(NodeView { id: p.node_id, version: p.version, labels: v.labels, properties_json: v.properties_json, span_refs: p.span_refs });
        Ok(())
    })?;
    let mut relationships = Vec::new();
    truncated |= each_chunk(txn, JOB_EDGES, job, page, |c: ProjectedEdges| c.edges, |p| {
        let from_dangling = !view.exists(&t, &p.from_id)?;
        let to_dangling = !view.exists(&t, &p.to_id)?;
        relationships.push(EdgeView { kind: p.kind, from_id: p.from_id, to_id: p.to_id, properties_json: p.properties_json, from_dangling, to_dangling });
        Ok(())
    })?;
    let after = skip.checked_sub(1).map(|i| (job, u32::try_from(i).unwrap_or(u32::MAX)));
    let (ambiguities, more) = list_ambiguities(txn, &t, Some(job), after, max_items)?;
    truncated |= more.is_some();
    Ok(Projection { job: rec, text, spans, nodes, relationships, ambiguities, truncated })
}

/// Which entries of each list one read returns.
#[derive(Debug, Clone, Copy)]
struct Page {
    skip: u64,
    max: usize,
}

/// Calls `each` on the items of `job`'s per-submission records in `table`, in order,
/// after the page's first `skip` and for at most `max` of them; returns whether there
/// were more.
fn each_chunk<C: Message + Default, T>(
    txn: &ReadTransaction,
    table: redb::TableDefinition<(u64, u32), &[u8]>,
    job: u64,
    page: Page,
    items: impl Fn(C) -> Vec<T>,
    mut each: impl FnMut(T) -> Result<(), GraphError>,
) -> Result<bool, GraphError> {
    let (mut skipped, mut taken) = (0u64, 0usize);
    for e in txn.open_table(table)?.range((job, 0)..=(job, u32::MAX))? {
        for item in items(C::decode(e?.1.value())?) {
            if skipped < page.skip {
                skipped += 1;
                continue;
            }
            if taken >= page.max {
                return Ok(true);
            }
            taken += 1;
            each(item)?;
        }
    }
    Ok(false)
}

/// Node `id` of `tenant`: every version, and up to `max_edges` edges each way.
pub fn node(txn: &ReadTransaction, tenant: &str, id: &str, max_edges: usize) -> Result<NodeDetail, GraphError> {
    let mut view = View::open(txn)?;
    if !view.exists(tenant, id)? {
        return Err(GraphError::NoNode(crate::failure::truncate_utf8(id, 128).to_string()));
    }
    let mut versions = Vec::new();
    for e in txn.open_table(NODE_VERSIONS)?.range((tenant, id, 0)..=(tenant, id, u32::MAX))? {
        let (k, v) = e?;
        let rec = NodeVersionRecord::decode(v.value())?;
        if view.job_visible(rec.job)? {
            versions.push((k.value().2, rec));
        }
    }
    let mut truncated = false;
    let out_table = txn.open_table(EDGES_OUT)?;
    let mut edges_out = Vec::new();
    for e in out_table.range((tenant, id, "", "")..)? {
        let (k, v) = e?;
        let (kt, from, kind, to) = k.value();
        if kt != tenant || from != id {
            break;
        }
        if edges_out.len() >= max_edges {
            truncated = true;
            break;
        }
        let r = EdgeRecord::decode(v.value())?;
        if !view.job_visible(r.job)? {
            continue;
        }
        let to_dangling = !view.exists(tenant, to)?;
        edges_out.push(EdgeView { kind: kind.into(), from_id: from.into(), to_id: to.into(), properties_json: r.properties_json, from_dangling: false, to_dangling });
    }
    // Incoming edges: the merged index and the rows still staged by job
    // (store::edges), in one (type, from id) order, each key once.
    let mut staged = crate::store::edges::staged_into(txn, tenant, id)?.into_iter().peekable();
    let merged_table = txn.open_table(EDGES_IN)?;
    let mut merged = merged_table.range((tenant, id, "", "")..)?;
    let mut merged_next = || -> Result<Option<(String, String)>, GraphError> {
        match merged.next().transpose()? {
            Some((k, _)) => {
                let (kt, to, kind, from) = k.value();
                Ok((kt == tenant && to == id).then(|| (kind.to_string(), from.to_string())))
            }
            None => Ok(None),
        }
    };
    let mut head = merged_next()?;
    let mut edges_in = Vec::new();
    loop {
        // The smaller of the two heads; a key in both is taken once (from the merged index).
        let from_stage = match (&head, staged.peek()) {
            (None, None) => break,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(m), Some(s)) => s < m,
        };
        let (kind, from, was_merged) = if from_stage {
            let Some((kind, from)) = staged.next() else { break };
            (kind, from, false)
        } else {
            let Some((kind, from)) = head.take() else { break };
            if staged.peek().is_some_and(|s| s.0 == kind && s.1 == from) {
                staged.next();
            }
            head = merged_next()?;
            (kind, from, true)
        };
        let record = out_table.get((tenant, from.as_str(), kind.as_str(), id))?.map(|b| EdgeRecord::decode(b.value())).transpose()?;
        if record.is_none() && !was_merged {
            // A staged row whose edge is gone (reclaimed) is no edge.
            continue;
        }
        if edges_in.len() >= max_edges {
            truncated = true;
            break;
        }
        let props = match record {
            Some(r) => {
                if !view.job_visible(r.job)? {
                    continue;
                }
                r.properties_json
            }
            None => "{}".into(),
        };
        let from_dangling = !view.exists(tenant, &from)?;
        edges_in.push(EdgeView { kind, from_id: from, to_id: id.into(), properties_json: props, from_dangling, to_dangling: false });
    }
    Ok(NodeDetail { tenant: tenant.into(), id: id.into(), versions, edges_out, edges_in, truncated })
}

/// A position in the ambiguity list: (job id, index within the job).
pub type AmbiguityPos = (u64, u32);

/// Ambiguities of `tenant` (of one job when given), after position `after`, at most
/// `limit`; the position to continue after, when there are more.
pub fn list_ambiguities(txn: &ReadTransaction, tenant: &str, job: Option<u64>, after: Option<AmbiguityPos>, limit: usize) -> Result<(Vec<AmbiguityView>, Option<AmbiguityPos>), GraphError> {
    let (lo_job, hi_job) = job.map_or((0, u64::MAX), |j| (j, j));
    let table = txn.open_table(AMBIGUITIES)?;
    let mut view = View::open(txn)?;
    let range = match after {
        Some((j, i)) if i == u32::MAX => table.range((tenant, j.saturating_add(1), 0)..=(tenant, hi_job, u32::MAX))?,
        Some((j, i)) => table.range((tenant, j, i + 1)..=(tenant, hi_job, u32::MAX))?,
        None => table.range((tenant, lo_job, 0)..=(tenant, hi_job, u32::MAX))?,
    };
    let mut out = Vec::new();
    let mut last = None;
    for e in range {
        let (k, v) = e?;
        let (_, j, i) = k.value();
        if !view.job_visible(j)? {
            continue;
        }
        if out.len() >= limit {
            return Ok((out, last));
        }
        out.push(AmbiguityView { job: j, ambiguity: AmbiguityRecord::decode(v.value())? });
        last = Some((j, i));
    }
    Ok((out, None))
}
