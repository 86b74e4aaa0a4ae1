//! Applying a job's submissions to the graph tables.
//!
//! A streamed job's partials are applied as they are accepted, each in the commit
//! that accepts it, so the cost of a large job is spread over its run and its final
//! commit stays small. A partial writes early only what no reader can see yet:
//! - nodes with core-assigned ids (fresh ids that no one else holds), with their
//!   versions;
//! - edges whose key no other job holds;
//! - the job's own rows: text chunks, spans, projected nodes and edges, ambiguities.
//!
//! Reads show a node version, an edge or an ambiguity only once the job that wrote
//! it has succeeded ([`super::read`]), so all of it appears with the final commit.
//! The rest (upserts of worker-given ids, edges that would overwrite another job's,
//! child jobs) is deferred: the partial's bytes stay staged, and the final commit
//! applies those parts in `seq` order before the final submission itself. An attempt
//! that ends without its final (failure, expiry, release, cancel) is reclaimed: every
//! row it wrote early is deleted in the transaction that ends it ([`reclaim`]).
//!
//! The final commit also computes the submission hash (blake3 over the hex blake3 of
//! each submission, in `seq` order, core ids as positions: [`super::positions`]), checks the content hash (a recrawl whose hash
//! equals the stored one projects nothing and is marked `unchanged`) and returns the
//! child jobs the submissions asked for: creating or linking them is a change of job
//! records, which [`crate::lifecycle::submit`] makes through the store's one writer.
use prost::Message;
use redb::{ReadableTable, Table, WriteTransaction};

use super::wire::{self, Interval, Relationship, Submission};
use crate::store::records::*;
use crate::store::tables::*;
use crate::store::{jobs, StoreError, Tx};

/// Where a submission's elements start in the job's global numbering: the running
/// totals of the submissions before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bases {
    pub nodes: u64,
    pub spans: u64,
    pub edges: u64,
    pub ambiguities: u64,
}

impl Bases {
    /// The totals a stored submission record ends at.
    pub fn after_record(r: &SubmissionRecord) -> Self {
        Self { nodes: r.nodes_total, spans: r.spans_total, edges: r.edges_total, ambiguities: r.ambiguities_total }
    }

    /// The totals a stored submission ends at, from its head.
    pub fn after_head(r: &SubmissionHead) -> Self {
        Self { nodes: r.nodes_total, spans: r.spans_total, edges: r.edges_total, ambiguities: r.ambiguities_total }
    }

    /// These totals with `sub` added.
    pub fn plus(self, sub: &Submission) -> Self {
        Self {
            nodes: self.nodes + sub.nodes.len() as u64,
            spans: self.spans + sub.spans.len() as u64,
            edges: self.edges + sub.relationships.len() as u64,
            ambiguities: self.ambiguities + sub.ambiguities.len() as u64,
        }
    }
}

/// Which of a submission's parts a pass writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// A partial, as it is accepted: what no reader can see yet.
    Early,
    /// A staged partial, at the final commit: what its early pass left.
    Deferred,
    /// The final submission: all of it.
    Whole,
}

/// What a partial's early pass left for the final commit.
#[derive(Debug, Default)]
pub struct Early {
    /// Relationships (indexes within the partial) whose key another job holds.
    pub deferred_edges: Vec<u32>,
    /// Whether the final commit needs the partial again (deferred nodes, edges or
    /// child jobs): only then are its bytes kept.
    pub needs_final: bool,
}

/// A submission's node and relationship properties as the canonical JSON text the
/// store keeps (sorted keys; "{}" when absent). Made where the submission is checked,
/// off the store's writer thread.
#[derive(Debug, Clone, Default)]
pub struct Encoded {
    pub nodes: Vec<String>,
    pub edges: Vec<String>,
}

impl Encoded {
    /// The canonical text of every node's and relationship's properties. A value that
    /// JSON text allows but the store cannot keep exactly (a number past float64's
    /// range, nesting deeper than 128 levels) is refused with its path, never dropped.
    pub fn of(sub: &Submission) -> Result<Self, wire::WireError> {
        fn text(path: String, raw: Option<&serde_json::value::RawValue>) -> Result<String, wire::WireError> {
            let Some(raw) = raw else { return Ok("{}".to_string()) };
            let mut de = serde_json::Deserializer::from_str(raw.get());
            let value: serde_json::Value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
                let inner = e.path().to_string();
                let at = if inner == "." { path.clone() } else { format!("{path}.{inner}") };
                let msg = e.into_inner().to_string();
                let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]).to_string();
                wire::WireError::field(at, format!("{msg}: the store keeps properties exactly, so this value is refused"))
            })?;
            if let Some(token) = inexact_integer(raw.get()) {
                return Err(wire::WireError::field(path, format!("the integer {token} does not fit 64 bits (-2^63 ..= 2^64-1, and not -0): the store keeps properties exactly, so this value is refused")));
            }
            serde_json::to_string(&value).map_err(|e| wire::WireError::field(path, e.to_string()))
        }
        let nodes = sub.nodes.iter().enumerate().map(|(i, n)| text(format!("nodes[{i}].properties"), n.properties.as_deref())).collect::<Result<_, _>>()?;
        let edges = sub.relationships.iter().enumerate().map(|(i, r)| text(format!("relationships[{i}].properties"), r.properties.as_deref())).collect::<Result<_, _>>()?;
        Ok(Self { nodes, edges })
    }
}

/// The first integer literal in the JSON text `raw` that a parsed value would not keep
/// exactly: past 64 bits (it would come back as the nearest double) or `-0` (it would
/// come back as the double -0.0). `raw` is valid JSON; numbers with a fraction or an
/// exponent are doubles on both sides and pass. The workers' builder refuses the same.
fn inexact_integer(raw: &str) -> Option<&str> {
    let bytes = raw.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if b == b'-' || b.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                i += 1;
            }
            let token = &raw[start..i];
            let integer = !token.contains(['.', 'e', 'E']);
            if integer && (token == "-0" || (token.parse::<i64>().is_err() && token.parse::<u64>().is_err())) {
                return Some(token);
            }
            continue;
        }
        i += 1;
    }
    None
}

/// An accepted submission with what the core made of it.
pub struct Part<'a> {
    pub sub: &'a Submission,
    /// Its nodes' ids, in order.
    pub ids: &'a [String],
    pub props: &'a Encoded,
}

/// Applies what `part` (a partial of lease `attempt` of `rec`, numbered from
/// `bases`) can write before the final commit.
pub fn apply_partial(txn: &WriteTransaction, rec: &JobRecord, attempt: u64, part: Part<'_>, bases: Bases, now: i64) -> Result<Early, StoreError> {
    let Part { sub, ids, props } = part;
    let deferred_edges = if has_graph(sub) { Projector::open(txn, rec.id, &rec.tenant, attempt, now)?.apply(sub, ids, props, bases, Pass::Early, &[])? } else { Vec::new() };
    let needs_final = !deferred_edges.is_empty() || sub.nodes.iter().any(|n| n.id.is_some()) || !sub.child_jobs.is_empty();
    Ok(Early { deferred_edges, needs_final })
}

/// The final submission, as accepted.
pub struct Final<'a> {
    pub sub: &'a Submission,
    /// The final submission's hash as the submission hash chains it ([`super::positions`]).
    pub position_hash: &'a str,
    pub node_ids: &'a [String],
    pub props: &'a Encoded,
    pub child_blobs: &'a [String],
    /// The latest contentHash over all of the job's submissions ("" when none).
    pub content_hash: &'a str,
}

/// What the final commit did.
pub struct Done {
    /// Nodes the job projected (all its submissions'; none when `unchanged`).
    pub nodes: u64,
    /// blake3 over the hex blake3 of every submission (core ids as positions), in `seq` order.
    pub submission_hash: String,
    pub unchanged: bool,
    /// The child jobs the job's submissions asked for, in order.
    pub children: Vec<ChildSpec>,
}

/// A child job requested by a submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildSpec {
    pub format: String,
    pub name: String,
    pub options_json: String,
    /// "<blake3>:<size>" of its content, already stored as a blob, or "".
    pub blob: String,
}

fn corrupt(msg: String) -> StoreError {
    StoreError::Corrupt(msg)
}

fn has_graph(sub: &Submission) -> bool {
    !(sub.canonical_text.is_empty() && sub.spans.is_empty() && sub.nodes.is_empty() && sub.relationships.is_empty() && sub.ambiguities.is_empty())
}

/// A global index as a table key.
fn index(n: u64, what: &str) -> Result<u32, StoreError> {
    u32::try_from(n).map_err(|_| corrupt(format!("more than u32::MAX {what} in one job")))
}

/// The final commit of lease `attempt` of `rec` (see the module docs).
pub fn finalize(tx: &Tx<'_, '_>, rec: &JobRecord, attempt: u64, fin: Final<'_>, now: i64) -> Result<Done, StoreError> {
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

    let mut chain = blake3::Hasher::new();
    let mut proj: Option<Projector<'_>> = None;
    let mut children = Vec::new();
    let mut bases = Bases::default();
    for k in 0..seq {
        let staged = jobs::submission::<SubmissionRecord>(tx, (rec.id, attempt, k))?.ok_or_else(|| corrupt(format!("job {} lease {attempt}: staged seq {k} is missing", rec.id)))?;
        chain.update(if staged.position_hash.is_empty() { staged.result_hash.as_bytes() } else { staged.position_hash.as_bytes() });
        if !unchanged && !staged.result_json.is_empty() {
            let sub = wire::parse(&staged.result_json).map_err(|e| corrupt(format!("job {} staged seq {k} no longer parses: {e}", rec.id)))?;
            if has_graph(&sub) {
                let p = match proj.as_mut() {
                    Some(p) => p,
                    None => proj.insert(Projector::open(txn, rec.id, &tenant, attempt, now)?),
                };
                let props = Encoded::of(&sub).map_err(|e| corrupt(format!("job {} staged seq {k}: {e}", rec.id)))?;
                p.apply(&sub, &staged.node_ids, &props, bases, Pass::Deferred, &staged.deferred_edges)?;
            }
            collect_children(&sub, &staged.child_blobs, &mut children);
        }
        bases = Bases::after_record(&staged);
    }
    chain.update(fin.position_hash.as_bytes());
    if unchanged {
        // Nothing of this attempt is projected: drop what its partials wrote early (and
        // their position runs).
        reclaim(tx, rec.id, &tenant, attempt)?;
    } else {
        if seq > 0 {
            // The staged partials, applied above, and their position runs. Runs are
            // recorded by partials only: an attempt that sent none has none to drop.
            tx.submissions()?.retain_in((rec.id, attempt, 0)..(rec.id, attempt, seq), |_, _| false)?;
            super::positions::drop_runs(txn, rec.id, attempt)?;
        }
        if has_graph(fin.sub) {
            let p = match proj.as_mut() {
                Some(p) => p,
                None => proj.insert(Projector::open(txn, rec.id, &tenant, attempt, now)?),
            };
            p.apply(fin.sub, fin.node_ids, fin.props, bases, Pass::Whole, &[])?;
        }
        collect_children(fin.sub, fin.child_blobs, &mut children);
    }
    drop(proj);
    let nodes = if unchanged { 0 } else { bases.plus(fin.sub).nodes };
    Ok(Done { nodes, submission_hash: chain.finalize().to_hex().to_string(), unchanged, children })
}

/// Deletes what lease `attempt` of `job` wrote before its final submission: its
/// staged partials and every row its partials applied early. Called in the
/// transaction that ends the attempt without a final (and for an `unchanged` one).
pub fn reclaim(tx: &Tx<'_, '_>, job: u64, tenant: &str, attempt: u64) -> Result<(), StoreError> {
    let txn = tx.txn;
    tx.submissions()?.retain_in((job, attempt, 0)..=(job, attempt, u32::MAX), |_, _| false)?;
    super::positions::drop_runs(txn, job, attempt)?;
    let ours = |j: u64, a: u64| j == job && a == attempt;

    {
        let mut versions = txn.open_table(NODE_VERSIONS)?;
        for chunk in take_job_records(txn, JOB_NODES, job)? {
            // Version 0: a deferred upsert that was never applied.
            for p in ProjectedNodes::decode(chunk.as_slice())?.nodes.into_iter().filter(|p| p.version > 0) {
                let key = (tenant, p.node_id.as_str(), p.version);
                let written = versions.get(key)?.map(|g| NodeVersionRecord::decode(g.value())).transpose()?;
                // A version another job wrote (one this job matched unchanged) stays.
                if written.is_some_and(|v| ours(v.job, v.attempt)) {
                    versions.remove(key)?;
                }
            }
        }
    }

    {
        let mut out = txn.open_table(EDGES_OUT)?;
        let mut into = txn.open_table(EDGES_IN)?;
        let mut staged = txn.open_table(EDGES_IN_STAGED)?;
        for chunk in take_job_records(txn, JOB_EDGES, job)? {
            for e in ProjectedEdges::decode(chunk.as_slice())?.edges {
                let key = (tenant, e.from_id.as_str(), e.kind.as_str(), e.to_id.as_str());
                let written = out.get(key)?.map(|g| EdgeRecord::decode(g.value())).transpose()?;
                // An edge another job holds (deferred, or written since: last writer wins) stays.
                if written.is_some_and(|r| ours(r.job, r.attempt)) {
                    out.remove(key)?;
                    // Its reverse key is staged under this job, or merged already.
                    staged.remove((job, tenant, e.to_id.as_str(), e.kind.as_str(), e.from_id.as_str()))?;
                    into.remove((tenant, e.to_id.as_str(), e.kind.as_str(), e.from_id.as_str()))?;
                }
            }
        }
    }
    take_job_records(txn, JOB_SPANS, job)?;
    take_job_records(txn, JOB_TEXT, job)?;
    txn.open_table(AMBIGUITIES)?.retain_in((tenant, job, 0)..=(tenant, job, u32::MAX), |_, _| false)?;
    Ok(())
}

/// Deletes `job`'s per-submission records in `table`; returns their bytes, in order.
fn take_job_records(txn: &WriteTransaction, table: redb::TableDefinition<(u64, u32), &[u8]>, job: u64) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut taken = Vec::new();
    txn.open_table(table)?.retain_in((job, 0)..=(job, u32::MAX), |_, v| {
        taken.push(v.to_vec());
        false
    })?;
    Ok(taken)
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

type StrKey4 = (&'static str, &'static str, &'static str, &'static str);
type VersionKey = (&'static str, &'static str, u32);

/// The latest version of node `id` and its record, if the node has any.
fn current_version(versions: &Table<'_, VersionKey, &'static [u8]>, tenant: &str, id: &str) -> Result<Option<(u32, NodeVersionRecord)>, StoreError> {
    let Some(entry) = versions.range((tenant, id, 0)..=(tenant, id, u32::MAX))?.next_back() else { return Ok(None) };
    let (k, v) = entry?;
    Ok(Some((k.value().2, NodeVersionRecord::decode(v.value())?)))
}

/// The graph tables of one transaction, opened once per pass over a commit.
struct Projector<'t> {
    job: u64,
    tenant: String,
    attempt: u64,
    now: i64,
    versions: Table<'t, VersionKey, &'static [u8]>,
    edges_out: Table<'t, StrKey4, &'static [u8]>,
    edges_staged: Table<'t, (u64, &'static str, &'static str, &'static str, &'static str), ()>,
    job_nodes: Table<'t, (u64, u32), &'static [u8]>,
    job_edges: Table<'t, (u64, u32), &'static [u8]>,
    job_spans: Table<'t, (u64, u32), &'static [u8]>,
    job_text: Table<'t, (u64, u32), &'static [u8]>,
    ambiguity_table: Table<'t, (&'static str, u64, u32), &'static [u8]>,
}

impl<'t> Projector<'t> {
    fn open(txn: &'t WriteTransaction, job: u64, tenant: &str, attempt: u64, now: i64) -> Result<Self, StoreError> {
        Ok(Self {
            job,
            tenant: tenant.to_string(),
            attempt,
            now,
            versions: txn.open_table(NODE_VERSIONS)?,
            edges_out: txn.open_table(EDGES_OUT)?,
            edges_staged: txn.open_table(EDGES_IN_STAGED)?,
            job_nodes: txn.open_table(JOB_NODES)?,
            job_edges: txn.open_table(JOB_EDGES)?,
            job_spans: txn.open_table(JOB_SPANS)?,
            job_text: txn.open_table(JOB_TEXT)?,
            ambiguity_table: txn.open_table(AMBIGUITIES)?,
        })
    }

    /// Writes the parts of `sub` (nodes `ids`, properties `props`, numbered from `b`)
    /// that `pass` covers; `deferred` are the relationships a `Deferred` pass applies.
    /// Returns the relationships an `Early` pass had to leave for the final commit.
    fn apply(&mut self, sub: &Submission, ids: &[String], props: &Encoded, b: Bases, pass: Pass, deferred: &[u32]) -> Result<Vec<u32>, StoreError> {
        if ids.len() != sub.nodes.len() || props.nodes.len() != sub.nodes.len() || props.edges.len() != sub.relationships.len() {
            return Err(corrupt(format!("job {}: {} node ids for {} nodes", self.job, ids.len(), sub.nodes.len())));
        }
        let key = (self.job, sub.seq);
        if pass != Pass::Deferred {
            if !sub.canonical_text.is_empty() {
                self.job_text.insert(key, sub.canonical_text.as_bytes())?;
            }
            if !sub.spans.is_empty() {
                let spans = sub.spans.iter().map(|s| SpanRecord { start: s.start, end: s.end, kind: s.kind.clone() }).collect();
                self.job_spans.insert(key, SpanRecords { spans }.encode_to_vec().as_slice())?;
            }
        }
        self.nodes(sub, ids, props, b, pass)?;
        let mut left = Vec::new();
        match pass {
            Pass::Deferred => {
                for &j in deferred {
                    let r = sub.relationships.get(j as usize).ok_or_else(|| corrupt(format!("job {}: deferred relationship {j} is missing", self.job)))?;
                    self.edge(r, ids, &props.edges[j as usize], true)?;
                }
            }
            Pass::Early | Pass::Whole => {
                let mut projected = Vec::with_capacity(sub.relationships.len());
                for (j, r) in sub.relationships.iter().enumerate() {
                    let (written, edge) = self.edge(r, ids, &props.edges[j], pass == Pass::Whole)?;
                    if !written {
                        left.push(index(j as u64, "relationships")?);
                    }
                    projected.push(edge);
                }
                if !projected.is_empty() {
                    self.job_edges.insert(key, ProjectedEdges { edges: projected }.encode_to_vec().as_slice())?;
                }
            }
        }
        if pass != Pass::Deferred {
            for (k, a) in sub.ambiguities.iter().enumerate() {
                let node_id = ids.get(usize::try_from(a.node_ref).unwrap_or(usize::MAX)).ok_or_else(|| corrupt(format!("ambiguity ref {} out of range", a.node_ref)))?;
                let rec = AmbiguityRecord {
                    node_id: node_id.clone(),
                    kind: a.kind.clone(),
                    candidates: a.candidates.iter().map(|c| CandidateRecord { label: c.label.clone(), valid_from: c.valid_from, valid_to: c.valid_to }).collect(),
                    detector_confidence: a.detector_confidence,
                    applied_candidate_confidence: a.applied_candidate_confidence,
                    severity_hint: a.severity_hint.clone().unwrap_or_default(),
                };
                let at = index(b.ambiguities + k as u64, "ambiguities")?;
                self.ambiguity_table.insert((self.tenant.as_str(), self.job, at), rec.encode_to_vec().as_slice())?;
            }
        }
        Ok(left)
    }

    /// The nodes `pass` covers, and the submission's record of projected nodes: all
    /// of them at an `Early` or `Whole` pass (a deferred node's version left 0), the
    /// deferred ones' versions filled in at a `Deferred` pass.
    fn nodes(&mut self, sub: &Submission, ids: &[String], props: &Encoded, b: Bases, pass: Pass) -> Result<(), StoreError> {
        let key = (self.job, sub.seq);
        if pass == Pass::Deferred && sub.nodes.is_empty() {
            // A partial of child jobs or edges alone projected no nodes and stored no record.
            return Ok(());
        }
        let mut projected = if pass == Pass::Deferred {
            let stored = self.job_nodes.get(key)?.map(|g| ProjectedNodes::decode(g.value())).transpose()?;
            stored.ok_or_else(|| corrupt(format!("job {} seq {}: projected nodes are missing", self.job, sub.seq)))?.nodes
        } else {
            Vec::with_capacity(sub.nodes.len())
        };
        if projected.len() != if pass == Pass::Deferred { sub.nodes.len() } else { 0 } {
            return Err(corrupt(format!("job {} seq {}: projected nodes do not match the submission", self.job, sub.seq)));
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
            let fresh = n.id.is_none();
            let due = match pass {
                Pass::Early => fresh,
                Pass::Deferred => !fresh,
                Pass::Whole => true,
            };
            let version = if due {
                let valid = n.valid_time.or_else(|| from_ambiguity.get(i).copied().flatten());
                let record = NodeVersionRecord {
                    labels: n.labels.clone(),
                    properties_json: props.nodes[i].clone(),
                    job: self.job,
                    attempt: self.attempt,
                    committed_at: self.now,
                    valid_from: valid.map(|v| v.valid_from),
                    valid_to: valid.and_then(|v| v.valid_to),
                };
                self.upsert(&ids[i], !fresh, record)?
            } else {
                0
            };
            if pass == Pass::Deferred {
                if due {
                    projected[i].version = version;
                }
            } else {
                let span_refs = n.span_refs.iter().map(|r| index(b.spans.saturating_add(*r), "spans")).collect::<Result<_, _>>()?;
                projected.push(ProjectedNode { node_id: ids[i].clone(), version, span_refs });
            }
        }
        if !projected.is_empty() {
            self.job_nodes.insert(key, ProjectedNodes { nodes: projected }.encode_to_vec().as_slice())?;
        }
        Ok(())
    }

    /// Writes relationship `r` (properties `props`) and returns whether it did, with
    /// the edge as the job projected it. Unless `overwrite`, an edge key another job
    /// holds is left as it is.
    fn edge(&mut self, r: &Relationship, ids: &[String], props: &str, overwrite: bool) -> Result<(bool, ProjectedEdge), StoreError> {
        let end = |id: &Option<String>, rf: Option<u64>, side: &str| -> Result<String, StoreError> {
            match (id, rf) {
                (Some(id), _) => Ok(id.clone()),
                (None, Some(x)) => ids.get(usize::try_from(x).unwrap_or(usize::MAX)).cloned().ok_or_else(|| corrupt(format!("{side} ref {x} out of range"))),
                (None, None) => Err(corrupt(format!("edge without a {side}"))),
            }
        };
        let edge = ProjectedEdge { kind: r.kind.clone(), from_id: end(&r.from_id, r.from_ref, "source")?, to_id: end(&r.to_id, r.to_ref, "target")?, properties_json: props.to_string() };
        let t = self.tenant.as_str();
        let key = (t, edge.from_id.as_str(), edge.kind.as_str(), edge.to_id.as_str());
        let record = EdgeRecord { properties_json: edge.properties_json.clone(), job: self.job, attempt: self.attempt };
        let previous = self.edges_out.insert(key, record.encode_to_vec().as_slice())?.map(|g| EdgeRecord::decode(g.value())).transpose()?;
        if !overwrite && let Some(p) = previous.filter(|p| (p.job, p.attempt) != (self.job, self.attempt)) {
            self.edges_out.insert(key, p.encode_to_vec().as_slice())?;
            return Ok((false, edge));
        }
        // The reverse key is staged next to this job's other rows (store::edges).
        self.edges_staged.insert((self.job, t, edge.to_id.as_str(), edge.kind.as_str(), edge.from_id.as_str()), ())?;
        Ok((true, edge))
    }

    /// Writes `version` of node `id` unless it is unchanged; returns the node's version.
    /// Core-assigned ids are new by construction; worker-given ids upsert.
    fn upsert(&mut self, id: &str, given: bool, version: NodeVersionRecord) -> Result<u32, StoreError> {
        let t = self.tenant.as_str();
        let mut next = 1;
        if given && let Some((v, existing)) = current_version(&self.versions, t, id)? {
            if same_labels(&existing.labels, &version.labels) && existing.properties_json == version.properties_json {
                return Ok(v);
            }
            next = v.checked_add(1).ok_or_else(|| corrupt(format!("node {id:?} has u32::MAX versions")))?;
        }
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
