//! Graph reads for `IngestService` (GetProjection, GetNode, ListAmbiguities):
//! request validation, the read on a blocking thread, and conversion to proto.
use tonic::Status;

use super::convert::{ident, job_id};
use super::{invalid, to_status};
use crate::actors::Core;
use crate::graph::read::{self, AmbiguityView, EdgeView};
use crate::graph::validate::MAX_NODE_ID_BYTES;
use crate::graph::GraphError;
use crate::proto::*;

const DEFAULT_ITEMS: u32 = 100_000;
const MAX_ITEMS: u32 = 1_000_000;
const MAX_EDGES: usize = 10_000;
const DEFAULT_PAGE: u32 = 1000;
const MAX_PAGE: u32 = 10_000;

/// The tenant a node-level read is scoped to: empty means "default", as for SubmitJob.
fn tenant_or_default(s: &str) -> Result<String, Status> {
    if s.is_empty() { Ok("default".into()) } else { ident("tenant_id", s) }
}

async fn read<T: Send + 'static>(f: impl FnOnce() -> Result<T, GraphError> + Send + 'static) -> Result<T, Status> {
    super::blocking(f).await?.map_err(to_status)
}

pub async fn projection(core: &Core, r: GetProjectionRequest) -> Result<Projection, Status> {
    let id = job_id("job_id", &r.job_id)?;
    let tenant = if r.tenant_id.is_empty() { None } else { Some(ident("tenant_id", &r.tenant_id)?) };
    if r.max_items > MAX_ITEMS {
        return Err(invalid("max_items", format!("at most {MAX_ITEMS}")));
    }
    let max = if r.max_items == 0 { DEFAULT_ITEMS } else { r.max_items } as usize;
    let store = core.store.clone();
    let skip = r.skip;
    let p = read(move || read::projection(&store.read()?, id, tenant.as_deref(), max, skip)).await?;
    Ok(Projection {
        job_id: p.job.id.to_string(),
        tenant_id: p.job.tenant.clone(),
        canonical_text: p.text,
        spans: p.spans.into_iter().map(|s| ProjectionSpan { start: s.start, end: s.end, kind: s.kind }).collect(),
        nodes: p
            .nodes
            .into_iter()
            .map(|n| ProjectionNode { id: n.id, labels: n.labels, properties_json: n.properties_json, span_refs: n.span_refs, version: n.version })
            .collect(),
        relationships: p.relationships.into_iter().map(edge).collect(),
        ambiguities: p.ambiguities.into_iter().map(ambiguity).collect(),
        unchanged: p.job.unchanged,
        truncated: p.truncated,
        submission_hash: p.job.submission_hash,
    })
}

pub async fn node(core: &Core, r: GetNodeRequest) -> Result<GraphNode, Status> {
    let tenant = tenant_or_default(&r.tenant_id)?;
    if r.node_id.is_empty() || r.node_id.len() > MAX_NODE_ID_BYTES {
        return Err(invalid("node_id", format!("must be 1..={MAX_NODE_ID_BYTES} bytes")));
    }
    let store = core.store.clone();
    let id = r.node_id;
    let n = read(move || read::node(&store.read()?, &tenant, &id, MAX_EDGES)).await?;
    Ok(GraphNode {
        tenant_id: n.tenant,
        id: n.id,
        versions: n
            .versions
            .into_iter()
            .map(|(version, v)| NodeVersion {
                version,
                labels: v.labels,
                properties_json: v.properties_json,
                job_id: v.job.to_string(),
                attempt: v.attempt,
                committed_at: v.committed_at,
                valid_from: v.valid_from,
                valid_to: v.valid_to,
            })
            .collect(),
        edges_out: n.edges_out.into_iter().map(edge).collect(),
        edges_in: n.edges_in.into_iter().map(edge).collect(),
        truncated: n.truncated,
    })
}

pub async fn ambiguities(core: &Core, r: ListAmbiguitiesRequest) -> Result<ListAmbiguitiesResponse, Status> {
    let job = if r.job_id.is_empty() { None } else { Some(job_id("job_id", &r.job_id)?) };
    if r.page_size > MAX_PAGE {
        return Err(invalid("page_size", format!("at most {MAX_PAGE}")));
    }
    let limit = if r.page_size == 0 { DEFAULT_PAGE } else { r.page_size } as usize;
    let after = if r.page_token.is_empty() {
        None
    } else {
        let bad = || invalid("page_token", "not a token from ListAmbiguities");
        let (j, i) = r.page_token.split_once('.').ok_or_else(bad)?;
        Some((j.parse::<u64>().map_err(|_| bad())?, i.parse::<u32>().map_err(|_| bad())?))
    };
    let given = if r.tenant_id.is_empty() { None } else { Some(ident("tenant_id", &r.tenant_id)?) };
    let store = core.store.clone();
    let (list, next) = read(move || {
        let txn = store.read()?;
        let tenant = match (given, job) {
            (Some(t), _) => t,
            // Scoped by the job: its own tenant (a job id alone is what GetJob takes too).
            (None, Some(j)) => crate::store::jobs::get(&txn, j)?.ok_or(GraphError::NoJob(j))?.job.tenant,
            (None, None) => "default".into(),
        };
        if let Some(j) = job {
            let owner = crate::store::jobs::get(&txn, j)?.map(|v| v.job.tenant);
            if owner.as_deref() != Some(tenant.as_str()) {
                return Err(GraphError::NoJob(j));
            }
        }
        read::list_ambiguities(&txn, &tenant, job, after, limit)
    })
    .await?;
    Ok(ListAmbiguitiesResponse { ambiguities: list.into_iter().map(ambiguity).collect(), next_page_token: next.map(|(j, i)| format!("{j}.{i}")).unwrap_or_default() })
}

fn edge(e: EdgeView) -> GraphRelationship {
    GraphRelationship { r#type: e.kind, from_id: e.from_id, to_id: e.to_id, properties_json: e.properties_json, from_dangling: e.from_dangling, to_dangling: e.to_dangling }
}

fn ambiguity(a: AmbiguityView) -> GraphAmbiguity {
    let x = a.ambiguity;
    GraphAmbiguity {
        job_id: a.job.to_string(),
        node_id: x.node_id,
        kind: x.kind,
        candidates: x.candidates.into_iter().map(|c| AmbiguityCandidate { label: c.label, valid_from: c.valid_from, valid_to: c.valid_to }).collect(),
        detector_confidence: x.detector_confidence,
        applied_candidate_confidence: x.applied_candidate_confidence,
        severity_hint: x.severity_hint,
    }
}
