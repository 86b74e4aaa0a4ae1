//! Applying a job's projection, inside the write transaction of its final
//! submission: the staged partials in `seq` order, then the final one. Everything
//! here was validated when it was accepted, so nothing can refuse half-way; a
//! staged record that no longer parses is storage corruption (the batch aborts).
//!
//! What one commit does: the submission hash over all `result_json` bytes; the
//! content-hash check (a recrawl whose hash equals the stored one projects nothing
//! and is marked `unchanged`); text chunks, spans, nodes (upserted on deterministic
//! ids), node versions with valid time, edges by id (dangling until their node
//! exists), ambiguities; child jobs created or linked by name.
use prost::Message;
use redb::{ReadableTable, Table, WriteTransaction};

use super::submit::NewChild;
use super::wire::{self, Interval, Submission};
use crate::store::jobs::{self, NewJob};
use crate::store::records::*;
use crate::store::state::JobState;
use crate::store::tables::*;
use crate::store::{StoreError, Tx};

/// The final submission, as accepted.
pub struct Final<'a> {
    pub sub: &'a Submission,
    pub result_json: &'a [u8],
    pub node_ids: &'a [String],
    pub child_blobs: &'a [String],
    /// The latest contentHash over all of the job's submissions ("" when none).
    pub content_hash: &'a str,
}

/// What the final commit did.
pub struct Done {
    pub nodes: u64,
    /// blake3 over every submission's bytes in `seq` order.
    pub submission_hash: String,
    /// blake3 of the final submission's bytes alone (for re-sends).
    pub final_hash: String,
    pub unchanged: bool,
    pub enqueued: Vec<NewChild>,
}

/// A child job requested by a submission.
struct ChildSpec {
    format: String,
    name: String,
    options_json: String,
    blob: String,
}

fn corrupt(msg: String) -> StoreError {
    StoreError::Corrupt(msg)
}

fn has_graph(sub: &Submission) -> bool {
    !(sub.canonical_text.is_empty() && sub.spans.is_empty() && sub.nodes.is_empty() && sub.relationships.is_empty() && sub.ambiguities.is_empty())
}

pub fn finalize(tx: &mut Tx<'_>, rec: &mut JobRecord, attempt: u64, fin: Final<'_>, now: i64) -> Result<Done, StoreError> {
    let txn = tx.txn;
    let seq = fin.sub.seq;
    let tenant = rec.tenant.clone();
    let unchanged = !fin.content_hash.is_empty() && {
        let source = if rec.url.is_empty() { rec.name.as_str() } else { rec.url.as_str() };
        let mut t = txn.open_table(CONTENT_HASHES)?;
        let same = t.get((tenant.as_str(), source))?.is_some_and(|g| g.value() == fin.content_hash);
        if !same {
            t.insert((tenant.as_str(), source), fin.content_hash)?;
        }
        same
    };

    let mut hasher = blake3::Hasher::new();
    let mut proj: Option<Projector<'_>> = None;
    let mut children = Vec::new();
    for k in 0..seq {
        let staged = {
            let t = txn.open_table(SUBMISSIONS)?;
            let bytes = t.get((rec.id, attempt, k))?.ok_or_else(|| corrupt(format!("job {} lease {attempt}: staged seq {k} is missing", rec.id)))?;
            SubmissionRecord::decode(bytes.value())?
        };
        hasher.update(&staged.result_json);
        if unchanged {
            continue;
        }
        let sub = wire::parse(&staged.result_json).map_err(|e| corrupt(format!("job {} staged seq {k} no longer parses: {e}", rec.id)))?;
        if has_graph(&sub) {
            let p = match proj.as_mut() {
                Some(p) => p,
                None => proj.insert(Projector::open(txn, rec.id, &tenant, attempt, now)?),
            };
            p.apply(&sub, &staged.node_ids)?;
        }
        collect_children(&sub, &staged.child_blobs, &mut children);
    }
    if seq > 0 {
        txn.open_table(SUBMISSIONS)?.retain_in((rec.id, attempt, 0)..(rec.id, attempt, seq), |_, _| false)?;
    }
    hasher.update(fin.result_json);
    if !unchanged {
        if has_graph(fin.sub) {
            let p = match proj.as_mut() {
                Some(p) => p,
                None => proj.insert(Projector::open(txn, rec.id, &tenant, attempt, now)?),
            };
            p.apply(fin.sub, fin.node_ids)?;
        }
        collect_children(fin.sub, fin.child_blobs, &mut children);
    }
    let nodes = proj.as_ref().map_or(0, |p| u64::from(p.nodes));
    drop(proj);
    let enqueued = if children.is_empty() { Vec::new() } else { link_children(tx, rec, children, now)? };
    Ok(Done {
        nodes,
        submission_hash: hasher.finalize().to_hex().to_string(),
        final_hash: blake3::hash(fin.result_json).to_hex().to_string(),
        unchanged,
        enqueued,
    })
}

fn collect_children(sub: &Submission, blobs: &[String], out: &mut Vec<ChildSpec>) {
    for (i, c) in sub.child_jobs.iter().enumerate() {
        out.push(ChildSpec {
            format: c.format.clone(),
            name: c.name.clone(),
            options_json: c.options.as_ref().map_or_else(|| "{}".to_string(), |o| o.to_string()),
            blob: blobs.get(i).cloned().unwrap_or_default(),
        });
    }
}

fn is_url(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    (l.starts_with("http://") || l.starts_with("https://")) && !s.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// Creates each child job, or links the existing one of the same name (per tenant).
fn link_children(tx: &mut Tx<'_>, parent: &mut JobRecord, children: Vec<ChildSpec>, now: i64) -> Result<Vec<NewChild>, StoreError> {
    let mut created = Vec::new();
    for c in children {
        let existing = tx.txn.open_table(CHILD_NAMES)?.get((parent.tenant.as_str(), c.name.as_str()))?.map(|g| g.value());
        let id = match existing {
            Some(id) if id == parent.id => continue,
            Some(id) => {
                if let Some(mut child) = jobs::load(tx.txn, id)? {
                    if !child.parents.contains(&parent.id) {
                        child.parents.push(parent.id);
                        let state = jobs::state_of(&child)?;
                        jobs::save(tx, Some(state), &child, now)?;
                    }
                }
                id
            }
            None => {
                let (blob, size) = match c.blob.split_once(':') {
                    Some((h, n)) => (h.to_string(), n.parse().unwrap_or(0)),
                    None if is_url(&c.name) => (String::new(), 0),
                    None => (blake3::hash(b"").to_hex().to_string(), 0),
                };
                let url = if blob.is_empty() { c.name.clone() } else { String::new() };
                let new = NewJob { tenant: parent.tenant.clone(), organization: parent.organization.clone(), format: c.format, name: c.name, options_json: c.options_json, url, blob, size };
                let mut child = jobs::insert(tx, new, now)?;
                child.parents.push(parent.id);
                jobs::save(tx, Some(JobState::Queued), &child, now)?;
                tx.txn.open_table(CHILD_NAMES)?.insert((parent.tenant.as_str(), child.name.as_str()), child.id)?;
                created.push(NewChild { id: child.id, format: child.format.clone(), tenant: child.tenant.clone() });
                child.id
            }
        };
        if !parent.children.contains(&id) {
            parent.children.push(id);
        }
    }
    Ok(created)
}

type StrKey2 = (&'static str, &'static str);
type StrKey4 = (&'static str, &'static str, &'static str, &'static str);

/// The graph tables of one transaction, opened once for the whole projection.
struct Projector<'t> {
    job: u64,
    tenant: String,
    attempt: u64,
    now: i64,
    /// Counters over the whole job (global indexes across partials).
    nodes: u32,
    spans: u32,
    edges: u32,
    ambiguities: u32,
    node_table: Table<'t, StrKey2, u32>,
    versions: Table<'t, (&'static str, &'static str, u32), &'static [u8]>,
    edges_out: Table<'t, StrKey4, &'static [u8]>,
    edges_in: Table<'t, StrKey4, ()>,
    job_nodes: Table<'t, (u64, u32), &'static [u8]>,
    job_edges: Table<'t, (u64, u32), &'static [u8]>,
    job_spans: Table<'t, (u64, u32), &'static [u8]>,
    job_text: Table<'t, (u64, u32), &'static [u8]>,
    ambiguity_table: Table<'t, (&'static str, u64, u32), &'static [u8]>,
}

fn bump(n: &mut u32, what: &str) -> Result<u32, StoreError> {
    let at = *n;
    *n = n.checked_add(1).ok_or_else(|| corrupt(format!("more than u32::MAX {what} in one job")))?;
    Ok(at)
}

impl<'t> Projector<'t> {
    fn open(txn: &'t WriteTransaction, job: u64, tenant: &str, attempt: u64, now: i64) -> Result<Self, StoreError> {
        Ok(Self {
            job,
            tenant: tenant.to_string(),
            attempt,
            now,
            nodes: 0,
            spans: 0,
            edges: 0,
            ambiguities: 0,
            node_table: txn.open_table(NODES)?,
            versions: txn.open_table(NODE_VERSIONS)?,
            edges_out: txn.open_table(EDGES_OUT)?,
            edges_in: txn.open_table(EDGES_IN)?,
            job_nodes: txn.open_table(JOB_NODES)?,
            job_edges: txn.open_table(JOB_EDGES)?,
            job_spans: txn.open_table(JOB_SPANS)?,
            job_text: txn.open_table(JOB_TEXT)?,
            ambiguity_table: txn.open_table(AMBIGUITIES)?,
        })
    }

    /// Applies one submission whose nodes got `ids` (in order).
    fn apply(&mut self, sub: &Submission, ids: &[String]) -> Result<(), StoreError> {
        if ids.len() != sub.nodes.len() {
            return Err(corrupt(format!("job {}: {} node ids for {} nodes", self.job, ids.len(), sub.nodes.len())));
        }
        let id_of = |r: u64| ids.get(usize::try_from(r).unwrap_or(usize::MAX)).ok_or_else(|| corrupt(format!("ref {r} out of range")));
        if !sub.canonical_text.is_empty() {
            self.job_text.insert((self.job, sub.seq), sub.canonical_text.as_bytes())?;
        }
        let span_base = self.spans;
        for s in &sub.spans {
            let at = bump(&mut self.spans, "spans")?;
            self.job_spans.insert((self.job, at), SpanRecord { start: s.start, end: s.end, kind: s.kind.clone() }.encode_to_vec().as_slice())?;
        }
        // An ambiguity's first candidate gives its node's valid time, unless the node has its own.
        let mut from_ambiguity: Vec<Option<Interval>> = Vec::new();
        if !sub.ambiguities.is_empty() {
            from_ambiguity = vec![None; sub.nodes.len()];
            for a in &sub.ambiguities {
                if let (Some(slot), Some(c)) = (from_ambiguity.get_mut(usize::try_from(a.node_ref).unwrap_or(usize::MAX)), a.candidates.first()) {
                    slot.get_or_insert(Interval { valid_from: c.valid_from, valid_to: c.valid_to });
                }
            }
        }
        for (i, n) in sub.nodes.iter().enumerate() {
            let id = &ids[i];
            let valid = n.valid_time.or_else(|| from_ambiguity.get(i).copied().flatten());
            let version = NodeVersionRecord {
                labels: n.labels.clone(),
                properties_json: n.properties.as_ref().map_or_else(|| "{}".to_string(), |p| p.to_string()),
                job: self.job,
                attempt: self.attempt,
                committed_at: self.now,
                valid_from: valid.map(|v| v.valid_from),
                valid_to: valid.and_then(|v| v.valid_to),
            };
            let v = self.upsert(id, n.id.is_some(), version)?;
            let span_refs = n.span_refs.iter().map(|r| span_base.saturating_add(u32::try_from(*r).unwrap_or(u32::MAX))).collect();
            let at = bump(&mut self.nodes, "nodes")?;
            self.job_nodes.insert((self.job, at), ProjectedNode { node_id: id.clone(), version: v, span_refs }.encode_to_vec().as_slice())?;
        }
        for r in &sub.relationships {
            let from = match (&r.from_id, r.from_ref) {
                (Some(id), _) => id,
                (None, Some(x)) => id_of(x)?,
                (None, None) => return Err(corrupt("edge without a source".into())),
            };
            let to = match (&r.to_id, r.to_ref) {
                (Some(id), _) => id,
                (None, Some(x)) => id_of(x)?,
                (None, None) => return Err(corrupt("edge without a target".into())),
            };
            let props = r.properties.as_ref().map_or_else(|| "{}".to_string(), |p| p.to_string());
            let t = self.tenant.as_str();
            self.edges_out.insert((t, from.as_str(), r.kind.as_str(), to.as_str()), EdgeRecord { properties_json: props.clone(), job: self.job }.encode_to_vec().as_slice())?;
            self.edges_in.insert((t, to.as_str(), r.kind.as_str(), from.as_str()), ())?;
            let at = bump(&mut self.edges, "relationships")?;
            self.job_edges.insert((self.job, at), ProjectedEdge { kind: r.kind.clone(), from_id: from.clone(), to_id: to.clone(), properties_json: props }.encode_to_vec().as_slice())?;
        }
        for a in &sub.ambiguities {
            let rec = AmbiguityRecord {
                node_id: id_of(a.node_ref)?.clone(),
                kind: a.kind.clone(),
                candidates: a.candidates.iter().map(|c| CandidateRecord { label: c.label.clone(), valid_from: c.valid_from, valid_to: c.valid_to }).collect(),
                detector_confidence: a.detector_confidence,
                applied_candidate_confidence: a.applied_candidate_confidence,
                severity_hint: a.severity_hint.clone().unwrap_or_default(),
            };
            let at = bump(&mut self.ambiguities, "ambiguities")?;
            self.ambiguity_table.insert((self.tenant.as_str(), self.job, at), rec.encode_to_vec().as_slice())?;
        }
        Ok(())
    }

    /// Writes `version` of node `id` unless it is unchanged; returns the node's version.
    /// Core-assigned ids are new by construction; worker-given ids upsert.
    fn upsert(&mut self, id: &str, given: bool, version: NodeVersionRecord) -> Result<u32, StoreError> {
        let t = self.tenant.as_str();
        let mut next = 1;
        if given {
            let current = self.node_table.get((t, id))?.map(|g| g.value());
            if let Some(v) = current {
                let existing = self.versions.get((t, id, v))?.map(|g| NodeVersionRecord::decode(g.value())).transpose()?;
                if existing.is_some_and(|e| same_labels(&e.labels, &version.labels) && e.properties_json == version.properties_json) {
                    return Ok(v);
                }
                next = v.checked_add(1).ok_or_else(|| corrupt(format!("node {id:?} has u32::MAX versions")))?;
            }
        }
        self.node_table.insert((t, id), next)?;
        self.versions.insert((t, id, next), version.encode_to_vec().as_slice())?;
        Ok(next)
    }
}

/// Labels compare as sets: their order carries no meaning.
fn same_labels(a: &[String], b: &[String]) -> bool {
    let mut a: Vec<&String> = a.iter().collect();
    let mut b: Vec<&String> = b.iter().collect();
    a.sort();
    b.sort();
    a == b
}
