//! Accepting a validated submission inside the shared write transaction: fencing,
//! `seq` order (a re-send is idempotent, a gap fails the attempt as `protocol`),
//! node ids, the early application of partials and, at the final submission, the
//! commit that makes the projection visible ([`crate::graph::apply`]) together with the
//! child jobs it asked for (created or linked here, through [`jobs`]' one writer).
//!
//! Each submission's record carries running totals (text end offset, counts of
//! nodes, spans, relationships and ambiguities, latest content hash), so accepting
//! partial `k` reads only record `k - 1`: the cost of a partial does not grow with
//! the number of partials before it.
use prost::Message;
use redb::{ReadTransaction, ReadableTable};

use crate::graph::apply::{self, Bases, ChildSpec, Encoded};
use crate::graph::positions;
use crate::graph::wire::Submission;
use crate::failure::FailureKind;
use crate::store::jobs::{self, FailOutcome, NewJob, Policy};
use crate::store::records::{FailureRecord, JobRecord, LeaseRecord, SubmissionHead, SubmissionRecord};
use crate::store::state::Event;
use crate::store::tables::{LEASES, SUBMISSIONS};
use crate::store::{StoreError, Tx};

/// A submission that passed validation, ready to be accepted.
#[derive(Debug, Clone)]
pub struct Staged {
    pub job_id: u64,
    /// The submitting worker, when it said (a seed-only worker does not): then the
    /// lease's holder must be it.
    pub worker_id: Option<String>,
    pub attempt: u64,
    /// The global text offset the RPC layer validated the spans against.
    pub base: u64,
    pub result_json: Vec<u8>,
    pub sub: Submission,
    /// The submission's properties as stored, encoded where it was checked.
    pub props: Encoded,
    /// Per child job: "<blake3>:<size>" of its content, already stored as a blob,
    /// "<blake3>:<size>:inline" of one in `child_inline`, or "".
    pub child_blobs: Vec<String>,
    /// The small child contents (blake3 hex, bytes), stored in CONTENTS when the
    /// submission is accepted, so a partial's children have theirs at the final commit.
    pub child_inline: Vec<(String, Vec<u8>)>,
    /// String tokens that look like core ids, for the submission hash ([`crate::graph::positions`]).
    pub core_refs: Vec<positions::CoreRef>,
}

/// A job created by a final submission, for the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChild {
    pub id: u64,
    pub format: String,
    pub tenant: String,
}

#[derive(Debug)]
pub enum SubmitOutcome {
    /// Stored. `finished` when this was the final submission; `enqueued` are the
    /// child jobs it created.
    /// `holder` is the worker that held the lease.
    Accepted { node_ids: Vec<String>, finished: bool, lease_deadline: i64, enqueued: Vec<NewChild>, holder: String },
    /// Not applied: fenced, or for a job that is not leased. Nothing changed.
    Rejected(String),
    /// Malformed in context (a gap in `seq`, a changed re-send): the attempt failed as `protocol`.
    Protocol { reason: String, failed: FailOutcome },
}

/// Where submission `seq` of lease `attempt` of `job` starts, as far as a snapshot knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// At this global text offset (the RPC layer validates spans against it; the
    /// write transaction checks it again).
    At(u64),
    /// Seq `seq - 1` of this lease is not accepted yet, and the lease is current: a
    /// pipelining worker sent `seq` before its predecessor was answered.
    Waiting,
    /// Seq `seq - 2` is not accepted either: a worker keeps at most two partials of a
    /// lease in flight, so `seq - 1` cannot be on its way; a gap.
    Gap,
    /// The lease is not current: the write transaction will fence the submission.
    NotLeased,
}

pub fn base_offset(txn: &ReadTransaction, job: u64, attempt: u64, seq: u32) -> Result<Base, StoreError> {
    let Some(prev) = seq.checked_sub(1) else { return Ok(Base::At(0)) };
    if let Some(b) = txn.open_table(SUBMISSIONS)?.get((job, attempt, prev))? {
        return Ok(Base::At(SubmissionHead::decode(b.value())?.text_end));
    }
    let current = match txn.open_table(LEASES)?.get(job)? {
        Some(b) => LeaseRecord::decode(b.value())?.attempt == attempt,
        None => false,
    };
    if !current {
        return Ok(Base::NotLeased);
    }
    let before = match prev.checked_sub(1) {
        Some(p) => txn.open_table(SUBMISSIONS)?.get((job, attempt, p))?.is_some(),
        None => true,
    };
    Ok(if before { Base::Waiting } else { Base::Gap })
}

/// Hands out `n` consecutive core node numbers; returns the first.
fn allocate_node_numbers(tx: &Tx<'_, '_>, n: u64) -> Result<u64, StoreError> {
    let mut t = tx.meta()?;
    let next = t.get("next_node_id")?.map(|g| g.value()).unwrap_or(1);
    if n > 0 {
        t.insert("next_node_id", next + n)?;
    }
    Ok(next)
}

pub fn submit(tx: &mut Tx<'_, '_>, s: Staged, policy: &Policy, now: i64) -> Result<SubmitOutcome, StoreError> {
    let seq = s.sub.seq;
    let key = (s.job_id, s.attempt, seq);
    if let Some(stored) = jobs::submission::<SubmissionRecord>(tx, key)? {
        // A re-send (the worker did not see our reply): same bytes → same answer.
        let same = stored.result_hash == blake3::hash(&s.result_json).to_hex().as_str();
        let same_lease = jobs::load(tx, s.job_id)?.is_some_and(|r| r.lease_seq == s.attempt);
        if same && same_lease {
            let lease = jobs::load_lease(tx, s.job_id)?;
            let (deadline, holder) = lease.map(|l| (l.deadline, l.worker_id)).unwrap_or_default();
            return Ok(SubmitOutcome::Accepted { node_ids: stored.node_ids, finished: !stored.partial, lease_deadline: deadline, enqueued: vec![], holder });
        }
    }
    let (mut rec, mut lease) = match jobs::fence(tx, s.job_id, s.worker_id.as_deref(), s.attempt)? {
        Ok(v) => v,
        Err(fenced) => return Ok(SubmitOutcome::Rejected(fenced.to_string())),
    };
    let expected = {
        let t = tx.submissions()?;
        u32::try_from(t.range((s.job_id, s.attempt, 0)..=(s.job_id, s.attempt, u32::MAX))?.count()).unwrap_or(u32::MAX)
    };
    if seq != expected {
        let reason = if seq < expected {
            format!("seq {seq} was already submitted with different bytes")
        } else {
            format!("seq {seq} leaves a gap: the next expected seq is {expected}")
        };
        let failure = FailureRecord {
            kind: FailureKind::Protocol.as_str().into(),
            permanent: policy.is_permanent(FailureKind::Protocol),
            reason: crate::failure::reason(FailureKind::Protocol, &reason),
            worker_id: s.worker_id.clone().unwrap_or_default(),
            ..Default::default()
        };
        let failed = super::fail(tx, s.job_id, s.worker_id.as_deref(), s.attempt, failure, policy, now)?;
        return Ok(SubmitOutcome::Protocol { reason, failed });
    }
    let prev = match seq.checked_sub(1) {
        Some(p) => jobs::submission::<SubmissionHead>(tx, (s.job_id, s.attempt, p))?,
        None => None,
    };
    let (base, bases, hash_before) = prev.map(|p| (p.text_end, Bases::after_head(&p), p.content_hash)).unwrap_or_default();
    if s.base != base {
        // Only a worker that sends seq k before seq k-1 was acknowledged gets here.
        return Ok(SubmitOutcome::Rejected(format!("seq {seq} was checked against text offset {} but the text so far ends at {base}: send it again", s.base)));
    }
    for (hash, data) in &s.child_inline {
        jobs::put_content(tx, hash, data)?;
    }
    let fresh: Vec<u32> = s.sub.nodes.iter().enumerate().filter(|(_, n)| n.id.is_none()).map(|(i, _)| u32::try_from(i).unwrap_or(u32::MAX)).collect();
    let first_core = allocate_node_numbers(tx, fresh.len() as u64)?;
    let mut next_core = first_core;
    let node_ids: Vec<String> = s
        .sub
        .nodes
        .iter()
        .map(|n| match &n.id {
            Some(id) => id.clone(),
            None => {
                next_core += 1;
                format!("n{}", next_core - 1)
            }
        })
        .collect();
    let totals = bases.plus(&s.sub);
    let result_hash = blake3::hash(&s.result_json).to_hex().to_string();
    let position_hash = if s.core_refs.is_empty() { result_hash.clone() } else { positions::position_hash(tx.txn, s.job_id, s.attempt, &s.result_json, &s.core_refs)? };
    if s.sub.partial {
        positions::record_run(tx.txn, s.job_id, s.attempt, first_core, seq, fresh)?;
    }
    let mut stored = SubmissionRecord {
        result_json: Vec::new(),
        node_ids: node_ids.clone(),
        partial: s.sub.partial,
        text_end: base + s.sub.canonical_text.len() as u64,
        nodes_total: totals.nodes,
        spans_total: totals.spans,
        edges_total: totals.edges,
        ambiguities_total: totals.ambiguities,
        content_hash: s.sub.content_hash.clone().unwrap_or(hash_before),
        child_blobs: s.child_blobs.clone(),
        result_hash,
        deferred_edges: Vec::new(),
        position_hash,
    };
    if s.sub.partial {
        let part = apply::Part { sub: &s.sub, ids: &node_ids, props: &s.props };
        let early = apply::apply_partial(tx.txn, &rec, s.attempt, part, bases, now)?;
        stored.deferred_edges = early.deferred_edges;
        if early.needs_final {
            stored.result_json = s.result_json;
        }
        tx.submissions()?.insert(key, stored.encode_to_vec().as_slice())?;
        // A partial is a sign of life: it extends the lease like a heartbeat.
        let lease_deadline = jobs::progress(tx, &mut rec, &mut lease, now + policy.lease_us, now)?;
        return Ok(SubmitOutcome::Accepted { node_ids, finished: false, lease_deadline, enqueued: vec![], holder: lease.worker_id });
    }

    let fin = apply::Final {
        sub: &s.sub,
        position_hash: &stored.position_hash,
        node_ids: &node_ids,
        props: &s.props,
        child_blobs: &s.child_blobs,
        content_hash: &stored.content_hash,
    };
    let done = apply::finalize(tx, &rec, s.attempt, fin, now)?;
    let enqueued = link_children(tx, &mut rec, done.children, now)?;
    // The staged partials were applied; only the final record stays (without its
    // bytes), so that a re-sent final gets the same answer.
    tx.submissions()?.insert(key, stored.encode_to_vec().as_slice())?;
    jobs::apply(tx, &mut rec, Event::Succeed, now, |r, _| {
        r.submission_hash = done.submission_hash;
        r.node_count = u32::try_from(done.nodes).unwrap_or(u32::MAX);
        r.unchanged = done.unchanged;
        r.next_attempt_at = 0;
    })?
    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(SubmitOutcome::Accepted { node_ids, finished: true, lease_deadline: 0, enqueued, holder: lease.worker_id })
}

/// The URL a content-less child job fetches: its name, bare or after a `url:` prefix (the web
/// worker names crawl children `url:<normalized URL>`), when that is an http(s) URL.
fn child_url(name: &str) -> Option<&str> {
    let url = name.strip_prefix("url:").unwrap_or(name);
    let l = url.to_ascii_lowercase();
    let ok = (l.starts_with("http://") || l.starts_with("https://")) && !url.chars().any(|c| c.is_control() || c.is_whitespace());
    ok.then_some(url)
}

/// Creates each child job, or links the existing one of the same name (per tenant);
/// `parent` lists them all (it is saved by the caller's `Succeed`). Returns the created ones.
fn link_children(tx: &mut Tx<'_, '_>, parent: &mut JobRecord, children: Vec<ChildSpec>, now: i64) -> Result<Vec<NewChild>, StoreError> {
    let mut created = Vec::new();
    for c in children {
        let id = match jobs::child_named(tx.txn, &parent.tenant, &c.name)? {
            Some(id) if id == parent.id => continue,
            Some(id) => {
                jobs::adopt(tx, id, parent.id, now)?;
                id
            }
            None => {
                let (inline, spec) = match c.blob.strip_suffix(":inline") {
                    Some(spec) => (true, spec),
                    None => (false, c.blob.as_str()),
                };
                let (blob, size, url) = match (spec.split_once(':'), child_url(&c.name)) {
                    (Some((h, n)), _) => (h.to_string(), n.parse().unwrap_or(0), String::new()),
                    (None, Some(url)) => (String::new(), 0, url.to_string()),
                    (None, None) => (blake3::hash(b"").to_hex().to_string(), 0, String::new()),
                };
                let new = NewJob { tenant: parent.tenant.clone(), organization: parent.organization.clone(), format: c.format, name: c.name, options_json: c.options_json, url, blob, size, inline, idempotency_key: String::new() };
                let child = jobs::insert_child(tx, new, parent.id, now)?;
                created.push(NewChild { id: child.id, format: child.format, tenant: child.tenant });
                child.id
            }
        };
        if !parent.children.contains(&id) {
            parent.children.push(id);
        }
    }
    Ok(created)
}
