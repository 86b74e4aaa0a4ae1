//! Stored records, encoded with prost so that fields can be added without a migration.
//! These are storage, not wire: the gRPC messages live in `proto/`.

#[derive(Clone, PartialEq, prost::Message)]
pub struct JobRecord {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(string, tag = "2")]
    pub tenant: String,
    #[prost(string, tag = "3")]
    pub organization: String,
    #[prost(string, tag = "4")]
    pub format: String,
    #[prost(string, tag = "5")]
    pub name: String,
    #[prost(string, tag = "6")]
    pub options_json: String,
    #[prost(string, tag = "7")]
    pub url: String,
    /// blake3 hex of the content blob; empty for URL jobs.
    #[prost(string, tag = "8")]
    pub blob: String,
    #[prost(uint64, tag = "9")]
    pub size: u64,
    /// `JobState` code.
    #[prost(uint32, tag = "10")]
    pub state: u32,
    /// Failed attempts since the job was (re)queued by a client.
    #[prost(uint32, tag = "11")]
    pub attempts: u32,
    /// The last lease number handed out: the fencing token. Never reused.
    #[prost(uint64, tag = "12")]
    pub lease_seq: u64,
    #[prost(int64, tag = "13")]
    pub created_at: i64,
    #[prost(int64, tag = "14")]
    pub updated_at: i64,
    #[prost(int64, tag = "15")]
    pub next_attempt_at: i64,
    #[prost(string, tag = "16")]
    pub submission_hash: String,
    #[prost(uint32, tag = "17")]
    pub node_count: u32,
    #[prost(uint64, repeated, tag = "18")]
    pub parents: Vec<u64>,
    #[prost(uint64, repeated, tag = "19")]
    pub children: Vec<u64>,
    #[prost(bool, tag = "20")]
    pub unchanged: bool,
    /// The content is in the CONTENTS table under `blob`, not a blob file.
    #[prost(bool, tag = "21")]
    pub inline: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseRecord {
    #[prost(string, tag = "1")]
    pub worker_id: String,
    #[prost(uint64, tag = "2")]
    pub attempt: u64,
    #[prost(int64, tag = "3")]
    pub deadline: i64,
    #[prost(int64, tag = "4")]
    pub granted_at: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FailureRecord {
    #[prost(uint64, tag = "1")]
    pub attempt: u64,
    #[prost(string, tag = "2")]
    pub kind: String,
    #[prost(bool, tag = "3")]
    pub permanent: bool,
    #[prost(string, tag = "4")]
    pub reason: String,
    #[prost(int64, tag = "5")]
    pub at: i64,
    #[prost(string, tag = "6")]
    pub worker_id: String,
    #[prost(int32, optional, tag = "7")]
    pub exit_code: Option<i32>,
    #[prost(int32, optional, tag = "8")]
    pub signal: Option<i32>,
    #[prost(string, tag = "9")]
    pub stderr_tail: String,
    #[prost(uint64, tag = "10")]
    pub peak_rss_bytes: u64,
    /// The worker's minimum wait before a retry (IngestionResult.retry_after_ms), as given.
    #[prost(uint64, tag = "11")]
    pub retry_after_ms: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SubmissionRecord {
    #[prost(bytes = "vec", tag = "1")]
    pub result_json: Vec<u8>,
    #[prost(string, repeated, tag = "2")]
    pub node_ids: Vec<String>,
    #[prost(bool, tag = "3")]
    pub partial: bool,
    /// Global byte offset just past this submission's text (running total).
    #[prost(uint64, tag = "4")]
    pub text_end: u64,
    /// Running count of nodes up to and including this submission.
    #[prost(uint64, tag = "5")]
    pub nodes_total: u64,
    /// The latest `contentHash` seen up to and including this submission.
    #[prost(string, tag = "6")]
    pub content_hash: String,
    /// Per child job of this submission: "<blake3>:<size>" of its content blob,
    /// "<blake3>:<size>:inline" of a content stored in CONTENTS, or "".
    #[prost(string, repeated, tag = "7")]
    pub child_blobs: Vec<String>,
    /// blake3 (hex) of the submission's bytes. `result_json` itself is kept only for a
    /// partial with parts the final commit still has to apply (see `graph::apply`).
    #[prost(string, tag = "8")]
    pub result_hash: String,
    /// Running count of spans up to and including this submission.
    #[prost(uint64, tag = "9")]
    pub spans_total: u64,
    /// Running count of relationships up to and including this submission.
    #[prost(uint64, tag = "10")]
    pub edges_total: u64,
    /// Running count of ambiguities up to and including this submission.
    #[prost(uint64, tag = "11")]
    pub ambiguities_total: u64,
    /// Indexes (within this submission) of the relationships deferred to the final commit.
    #[prost(uint32, repeated, tag = "12")]
    pub deferred_edges: Vec<u32>,
    /// blake3 (hex) of the submission's bytes with every core-assigned id of this job
    /// replaced by its position (see `graph::positions`): what the submission hash
    /// chains. Empty in records written before it existed (then `result_hash` counts).
    #[prost(string, tag = "13")]
    pub position_hash: String,
}

/// What the next submission of an attempt needs of a stored [`SubmissionRecord`]: its
/// running totals, without the record's `result_json` and lists, which decoding skips
/// instead of copying (a partial that fans out children keeps megabytes of JSON there).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SubmissionHead {
    #[prost(uint64, tag = "4")]
    pub text_end: u64,
    #[prost(uint64, tag = "5")]
    pub nodes_total: u64,
    #[prost(string, tag = "6")]
    pub content_hash: String,
    #[prost(uint64, tag = "9")]
    pub spans_total: u64,
    #[prost(uint64, tag = "10")]
    pub edges_total: u64,
    #[prost(uint64, tag = "11")]
    pub ambiguities_total: u64,
}

/// The core-assigned ids one submission got: consecutive numbers from the run's first.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CoreIdRun {
    #[prost(uint32, tag = "1")]
    pub seq: u32,
    /// Per id, in number order: the index of its node in the submission.
    #[prost(uint32, repeated, tag = "2")]
    pub indexes: Vec<u32>,
}

/// One version of a node.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeVersionRecord {
    #[prost(string, repeated, tag = "1")]
    pub labels: Vec<String>,
    /// Canonical JSON (sorted keys) of the properties object.
    #[prost(string, tag = "2")]
    pub properties_json: String,
    #[prost(uint64, tag = "3")]
    pub job: u64,
    #[prost(uint64, tag = "4")]
    pub attempt: u64,
    /// When this version was written (µs): the commit of the submission that carried it,
    /// a partial's for a node applied early. It is visible from its job's final commit.
    #[prost(int64, tag = "5")]
    pub committed_at: i64,
    #[prost(int64, optional, tag = "6")]
    pub valid_from: Option<i64>,
    #[prost(int64, optional, tag = "7")]
    pub valid_to: Option<i64>,
}

/// An edge as stored by endpoint ids.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EdgeRecord {
    #[prost(string, tag = "1")]
    pub properties_json: String,
    /// The job that last wrote the edge.
    #[prost(uint64, tag = "2")]
    pub job: u64,
    /// That job's lease number (0 in records written before partials applied early).
    #[prost(uint64, tag = "3")]
    pub attempt: u64,
}

/// A node as one job projected it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProjectedNode {
    #[prost(string, tag = "1")]
    pub node_id: String,
    /// The node version this job produced or matched; 0 while a deferred upsert
    /// waits for the final commit.
    #[prost(uint32, tag = "2")]
    pub version: u32,
    /// Indexes into the job's spans (global across partials).
    #[prost(uint32, repeated, tag = "3")]
    pub span_refs: Vec<u32>,
}

/// A relationship as one job projected it, endpoints resolved to ids.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProjectedEdge {
    #[prost(string, tag = "1")]
    pub kind: String,
    #[prost(string, tag = "2")]
    pub from_id: String,
    #[prost(string, tag = "3")]
    pub to_id: String,
    #[prost(string, tag = "4")]
    pub properties_json: String,
}

/// One submission's nodes as the job projected them, in order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProjectedNodes {
    #[prost(message, repeated, tag = "1")]
    pub nodes: Vec<ProjectedNode>,
}

/// One submission's relationships, in order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProjectedEdges {
    #[prost(message, repeated, tag = "1")]
    pub edges: Vec<ProjectedEdge>,
}

/// One submission's spans, in order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SpanRecords {
    #[prost(message, repeated, tag = "1")]
    pub spans: Vec<SpanRecord>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SpanRecord {
    #[prost(uint64, tag = "1")]
    pub start: u64,
    #[prost(uint64, tag = "2")]
    pub end: u64,
    #[prost(string, tag = "3")]
    pub kind: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CandidateRecord {
    #[prost(string, tag = "1")]
    pub label: String,
    #[prost(int64, tag = "2")]
    pub valid_from: i64,
    #[prost(int64, optional, tag = "3")]
    pub valid_to: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AmbiguityRecord {
    #[prost(string, tag = "1")]
    pub node_id: String,
    #[prost(string, tag = "2")]
    pub kind: String,
    #[prost(message, repeated, tag = "3")]
    pub candidates: Vec<CandidateRecord>,
    #[prost(double, tag = "4")]
    pub detector_confidence: f64,
    #[prost(double, tag = "5")]
    pub applied_candidate_confidence: f64,
    #[prost(string, tag = "6")]
    pub severity_hint: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_submission_head_reads_the_totals_of_a_record_and_skips_the_rest() {
        let record = SubmissionRecord {
            result_json: vec![b'x'; 1 << 20],
            node_ids: vec!["n1".into(), "n2".into()],
            partial: true,
            text_end: 17,
            nodes_total: 3,
            content_hash: "abc".into(),
            child_blobs: vec!["h:1:inline".into()],
            result_hash: "r".into(),
            spans_total: 5,
            edges_total: 7,
            ambiguities_total: 11,
            deferred_edges: vec![1, 2],
            position_hash: "p".into(),
        };
        let head = SubmissionHead::decode(record.encode_to_vec().as_slice()).expect("decodes");
        assert_eq!(
            head,
            SubmissionHead { text_end: 17, nodes_total: 3, content_hash: "abc".into(), spans_total: 5, edges_total: 7, ambiguities_total: 11 }
        );
    }
}
